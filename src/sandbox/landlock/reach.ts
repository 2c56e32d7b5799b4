// Whether the sandbox user can reach a path. A root server's landlock runs are uids of their own
// (landlock/uids.ts, in a group of their own) on the host's own tree (no namespace binds their paths into a
// tree of their own): every directory above a path a run uses must let them search it.
// Directories of codexec's own (CODEXEC_HOME, the sandbox dir and the other roots runs live
// beneath) are lent search for the runs' group alone, by a POSIX ACL entry (`group:<RUN_GID>:--x`:
// no listing, no host process); any other directory that blocks (a CODEXEC_HOME set under /root, 0700)
// refuses the run, naming it and the fix: no mount can lift that without namespaces, and codexec
// does not change the permissions of the host's directories.
// (The default home keeps a root server's runs out of such a place: config/paths.ts runHome.)
import { statSync } from 'node:fs';
import { dirname, relative } from 'node:path';
import type { Identity } from '../host/index.js';
import { Script } from './script.js';
import { isRunUid, RUN_GID } from './uids.js';

/** Run `script` with the launcher; its exit status (0: every call succeeded). */
export type RunScript = (script: Buffer) => number;

const SETXATTR = 188;
const EXIT_GROUP = 231;
const XATTR_CREATE = 1;
// include/uapi/linux/posix_acl_xattr.h and posix_acl.h.
const ACL_VERSION = 2;
const ACL_USER_OBJ = 0x01;
const ACL_USER = 0x02;
const ACL_GROUP_OBJ = 0x04;
const ACL_GROUP = 0x08;
const ACL_MASK = 0x10;
const ACL_OTHER = 0x20;
const ACL_UNDEFINED_ID = 0xffffffff;
const SEARCH = 1;

export class Reach {
  /** Directories known searchable by the runs' group or by a login user's uid (lent or found so). */
  private readonly searchable = new Set<string>();
  /**
   * Directories lent search: their mode before the first lend, whether the runs' group was lent
   * it, and every login user's uid lent so far. Each lend writes the whole ACL again, with all of
   * them: a later one (a host directory's owner) never takes the search an earlier one was lent.
   */
  private readonly lent = new Map<
    string,
    { readonly mode: number; group: boolean; readonly uids: Set<number> }
  >();

  constructor(
    /** codexec's own directories: those and everything beneath may be lent search. */
    private readonly owned: readonly string[],
    private readonly run: RunScript,
    /** Of those, the ones that hold only workspaces (0700 each): a login user may be lent search there. */
    private readonly workspaceDirs: readonly string[] = [],
  ) {}

  /**
   * Why `who` cannot reach `path` (a sentence naming the directory and the fix), or undefined;
   * `within`: search `path` itself too (a directory runs live beneath).
   */
  check(path: string, who: Identity, within = false, lent: readonly string[] = []): string | undefined {
    for (const dir of within ? [...above(path), path] : above(path)) {
      if (lent.some((root) => isBeneath(dir, root))) continue; // the run's own, lent to `who` itself
      const key = `${isRunUid(who.uid) ? 'runs' : who.uid}:${dir}`;
      if (this.searchable.has(key)) continue;
      let stats: { mode: number; uid: number; gid: number };
      try {
        stats = statSync(dir);
      } catch {
        return undefined; // gone: the run's own lookup reports it
      }
      if (!maySearch(stats, who)) {
        if (!this.isOwned(dir)) return unreachable(path, dir, who, "is not codexec's to open");
        // A login user (a host directory's owner) is never lent a way into codexec's directories,
        // but for those that hold only workspaces (each closed to all but its own run): outside
        // any sandbox it could reach, by name, what the others hold (index.db, logs, keys).
        if (!isRunUid(who.uid) && !this.workspaceDirs.includes(dir))
          return unreachable(
            path,
            dir,
            who,
            "codexec lends search on its directories (but the sandbox dir, which holds only workspaces) to its runs' group alone, never to a login user",
          );
        if (!this.lend(dir, stats, who))
          return unreachable(path, dir, who, "is codexec's, but an ACL could not be added to it");
      }
      this.searchable.add(key);
    }
    return undefined;
  }

  private isOwned(dir: string): boolean {
    return this.owned.some((root) => isBeneath(dir, root));
  }

  /**
   * Add `group:<RUN_GID>:--x` (a run) or `user:<uid>:--x` (a login user) to the directory's ACL (absent
   * before codexec's first lend, then codexec's own), keeping what its mode granted before.
   */
  private lend(dir: string, stats: { mode: number }, who: Identity): boolean {
    const first = !this.lent.has(dir);
    const record = this.lent.get(dir) ?? { mode: stats.mode, group: false, uids: new Set<number>() };
    const run = isRunUid(who.uid);
    const uids = [...new Set([...record.uids, ...(run ? [] : [who.uid])])].sort((a, b) => a - b);
    const bits = (shift: number) => (record.mode >> shift) & 7;
    const entries: [number, number, number][] = [
      [ACL_USER_OBJ, bits(6), ACL_UNDEFINED_ID],
      ...uids.map((uid): [number, number, number] => [ACL_USER, SEARCH, uid]),
      [ACL_GROUP_OBJ, bits(3), ACL_UNDEFINED_ID],
      ...(record.group || run ? [[ACL_GROUP, SEARCH, RUN_GID] as [number, number, number]] : []),
      [ACL_MASK, bits(3) | SEARCH, ACL_UNDEFINED_ID],
      [ACL_OTHER, bits(0), ACL_UNDEFINED_ID],
    ];
    const acl = Buffer.alloc(4 + entries.length * 8);
    acl.writeUInt32LE(ACL_VERSION, 0);
    entries.forEach(([tag, perm, id], i) => {
      acl.writeUInt16LE(tag, 4 + i * 8);
      acl.writeUInt16LE(perm, 6 + i * 8);
      acl.writeUInt32LE(id, 8 + i * 8);
    });
    const script = new Script();
    const name = script.string('system.posix_acl_access');
    // XATTR_CREATE the first time: an ACL someone set already is theirs; it is left as it is (and
    // the run refused) where the kernel honours the flag for ACLs (before 6.2; later kernels
    // replace it, codexec's of an earlier server among them). Later, codexec's own is written again whole.
    script.call(SETXATTR, [
      { at: script.string(dir) },
      { at: name },
      { at: script.data(acl) },
      acl.length,
      first ? XATTR_CREATE : 0,
    ]);
    script.call(EXIT_GROUP, [0]);
    if (this.run(script.encode()) !== 0) return false;
    if (run) record.group = true;
    else record.uids.add(who.uid);
    this.lent.set(dir, record);
    return mayReach(dir, who);
  }
}

/** `dir` is `root` or inside it. */
function isBeneath(dir: string, root: string): boolean {
  const inside = relative(root, dir);
  return inside === '' || (!inside.startsWith('..') && !inside.startsWith('/'));
}

function above(path: string): string[] {
  const dirs: string[] = [];
  for (let dir = dirname(path); ; dir = dirname(dir)) {
    dirs.unshift(dir);
    if (dir === dirname(dir)) return dirs;
  }
}

/** The classic bits (POSIX ACLs aside). */
function maySearch(stats: { mode: number; uid: number; gid: number }, who: Identity): boolean {
  const { mode, uid, gid } = stats;
  if (uid === who.uid) return (mode & 0o100) !== 0;
  if (gid === who.gid) return (mode & 0o010) !== 0;
  return (mode & 0o001) !== 0;
}

/** After a lend: the mode's group bits are the ACL's mask now, which grants search. */
function mayReach(dir: string, who: Identity): boolean {
  try {
    const stats = statSync(dir);
    return maySearch(stats, who) || (stats.mode & 0o010) !== 0;
  } catch {
    return false;
  }
}

function unreachable(path: string, dir: string, who: Identity, why: string): string {
  return (
    `${isRunUid(who.uid) ? "the sandbox's runs (uids and a group of their own)" : `the sandbox user (uid ${who.uid})`} ` +
    `cannot reach ${path}: ${dir} does not let them search and ${why} ` +
    "(landlock mode binds nothing: code sees the host's own tree). Put CODEXEC_HOME (or " +
    'CODEXEC_SANDBOX_DIR, CODEXEC_WORKSPACE) under a directory every user may search, e.g. ' +
    '/var/lib/codexec, or leave CODEXEC_HOME unset (a root server then keeps its runs there), or ' +
    'run codexec as an ordinary user'
  );
}
