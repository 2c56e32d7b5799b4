// The one way a caller's path becomes a directory code works in: beneath a root the operator
// listed (CODEXEC_ALLOWED_PATHS), opened one name at a time without following a symlink, owned by
// whom the code will run as, and apart from every other live run's or session's.

import { closeSync, constants, fstatSync, lstatSync, openSync, readFileSync, realpathSync } from 'node:fs';
import { basename, dirname, isAbsolute, join, relative, resolve } from 'node:path';
import type { Config } from '../config/index.js';
import { ForbiddenPathError, InvalidInputError } from '../errors/index.js';
import { expandHome, HeldDir, isWithin, type Owner, openDirBeneath } from '../util/index.js';
import { forbiddenPaths } from './working-dir.js';

/** The argument a path came in, for messages: execute_code/start_session's or execute_command's. */
export type DirArgument = 'working_dir' | 'work_dir';

/** Ordinary users' uids (Debian's and Fedora's UID_MIN and UID_MAX); outside, system accounts. */
const FIRST_USER_UID = 1000;
const LAST_USER_UID = 60000;
const NOBODY = 65534;

/**
 * The host directories held by live runs and sessions, server-wide: a new one inside or around a
 * live one is refused, so no run can rename or replace the directory another works in.
 */
export class HostDirs {
  private readonly live = new Set<HeldDir>();

  constructor(
    private readonly config: Pick<
      Config,
      'home' | 'logDir' | 'scriptsDir' | 'sandboxDir' | 'envsDir' | 'command'
    >,
    private readonly serverUid: number = process.getuid?.() ?? 0,
  ) {}

  /**
   * Opens the directory `input` names for one run or session; close() the result when it ends.
   * FORBIDDEN_PATH outside the allowed roots, on a symlink, inside or around a forbidden or live
   * directory, or (root server) owned by root or a system account.
   */
  open(input: string, argument: DirArgument): HeldDir {
    return this.hold(input, argument, true);
  }

  private hold(input: string, argument: DirArgument, live: boolean): HeldDir {
    if (input.includes('\0')) throw new InvalidInputError(`${argument} must not contain NUL characters`);
    if (!isAbsolute(input) && !input.startsWith('~'))
      throw new InvalidInputError(`${argument} ${input} must be an absolute path`);
    const own = ownWorkspace(expandHome(input), this.config);
    if (own) throw new ForbiddenPathError(`${argument} ${input} is ${own}`);
    const roots = this.config.command.allowedPaths;
    if (roots.length === 0)
      throw new ForbiddenPathError(
        `${argument} ${input} is refused: no host directory is open to code (CODEXEC_ALLOWED_PATHS lists none). Omit ${argument} to work in a fresh workspace, or ask the operator to list the directory's root in CODEXEC_ALLOWED_PATHS`,
      );
    // A forbidden place is refused as written too: a missing ~/.ssh is no less forbidden.
    const requested = expandHome(input);
    this.refuseForbidden(requested, input, argument);
    const realRoots = roots.map(realOrUndefined).filter((path) => path !== undefined);
    const beneath = (path: string) => realRoots.find((root) => isWithin(path, root));
    const outside = () =>
      new ForbiddenPathError(
        `${argument} ${input} is outside CODEXEC_ALLOWED_PATHS (${roots.join(', ')}), the only host directories code may work in`,
      );
    const real = realOrUndefined(requested);
    if (real === undefined) {
      // Missing. Whether a path outside the roots exists is nobody's to learn from a root server:
      // "does not exist" only where its nearest existing directory is beneath a root.
      if (beneath(nearestReal(requested)) === undefined) throw outside();
      throw new InvalidInputError(`${argument} ${input} does not exist; create it first or omit ${argument}`);
    }
    const root = beneath(real);
    if (root === undefined) throw outside();
    this.refuseForbidden(real, input, argument);
    const fd = openBeneathRoot(root, real, input, argument);
    let held: HeldDir | undefined;
    try {
      held = HeldDir.adopt(real, fd, {
        host: this.runAs(fstatSync(fd), input, argument),
        onClose: () => this.live.delete(held as HeldDir),
      });
      if (live) this.refuseOverlap(held, input, argument);
    } catch (error) {
      if (held) held.close();
      else closeSync(fd);
      throw error;
    }
    if (live) this.live.add(held);
    return held;
  }

  /**
   * Opens again, for one read, the host directory an ended run worked in (its log entry's
   * working_dir): the same rules as open() but no other run's is in its way. The caller closes it.
   */
  reopen(path: string): HeldDir {
    return this.hold(path, 'working_dir', false);
  }

  /** The uid code runs as there: a root server's is the owner's, an ordinary user's is its own. */
  private runAs(owner: Owner, input: string, argument: DirArgument): { runAs?: Owner } {
    if (this.serverUid !== 0) return {};
    if (owner.uid === 0)
      throw new ForbiddenPathError(
        `${argument} ${input} is owned by root: code works in a host directory only as its owner, an ordinary user (chown it to one, or omit ${argument})`,
      );
    if (owner.uid < FIRST_USER_UID || owner.uid > LAST_USER_UID)
      throw new ForbiddenPathError(
        `${argument} ${input} is owned by uid ${owner.uid}, a system account: code works in a host directory only as its owner, an ordinary user (uid ${FIRST_USER_UID} to ${LAST_USER_UID})`,
      );
    // Never the directory's group, which anyone who can chgrp it chooses (docker, disk, shadow …):
    // the owner's own primary group where it is an ordinary one, else nobody's.
    return { runAs: { uid: owner.uid, gid: primaryGroup(owner.uid) } };
  }

  private refuseForbidden(real: string, input: string, argument: DirArgument): void {
    for (const path of forbiddenPaths(this.config as Config)) {
      const forbidden = realOrUndefined(path) ?? path;
      if (isWithin(real, forbidden) || isWithin(forbidden, real))
        throw new ForbiddenPathError(
          `${argument} ${input} is inside or contains ${path}, which code may not use`,
        );
    }
  }

  private refuseOverlap(held: HeldDir, input: string, argument: DirArgument): void {
    for (const other of this.live) {
      if (other.dev === held.dev && other.ino === held.ino) continue; // the same directory: shared
      if (isWithin(held.path, other.path) || isWithin(other.path, held.path))
        throw new ForbiddenPathError(
          `${argument} ${input} is inside or around the directory of another live run or session; use that very directory, or another one`,
        );
    }
  }
}

/**
 * A workspace of codexec's own that `path` is in, and the argument that reaches it, for the
 * refusal to name: a session's (session_id), a run's (its files: read_file {execution_id}), or
 * execute_command's (workspace: "command"). Undefined for any other path.
 */
function ownWorkspace(path: string, config: Pick<Config, 'sandboxDir' | 'command'>): string | undefined {
  const real = realOrUndefined(path) ?? path;
  const within = (dir: string) => isWithin(real, realOrUndefined(dir) ?? dir);
  if (within(config.command.workspace))
    return 'in execute_command\'s workspace: name it with workspace: "command" (run_script, read_file, write_file) or run there with execute_command';
  if (!within(config.sandboxDir)) return undefined;
  const [id = ''] = relative(realOrUndefined(config.sandboxDir) ?? config.sandboxDir, real).split('/');
  if (id.startsWith('sess_'))
    return `in session ${id}'s workspace: run there with session_id: "${id}" (execute_code, run_script, send_to_session; read_file, write_file)`;
  if (id.startsWith('exec_'))
    return `in run ${id}'s workspace: read what it left with read_file {execution_id: "${id}", path}`;
  return "in codexec's own workspaces, which code may not be pointed at";
}

/** Opens `real` beneath the allowed root `root` (both real paths), refusing a symlink on the way. */
function openBeneathRoot(root: string, real: string, input: string, argument: DirArgument): number {
  const rootFd = openSync(root, constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW);
  try {
    const rel = relative(root, real);
    return openDirBeneath(rootFd, rel === '' ? [] : rel.split('/'), { shown: input });
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') throw new InvalidInputError(`${argument} ${input} does not exist`);
    // The caller is told which argument to fix.
    if (error instanceof ForbiddenPathError) throw new ForbiddenPathError(`${argument} ${error.message}`);
    throw error;
  } finally {
    closeSync(rootFd);
  }
}

/**
 * `path` with its nearest existing ancestor's real path in place of that ancestor (for a missing
 * path). A link that leads nowhere on the way counts as leading out: where it points is not for a
 * caller to probe (`root/link -> /root/zzz` must answer as `root/link -> /root/.bashrc` does).
 */
function nearestReal(path: string): string {
  const rest: string[] = [];
  for (let at = resolve(path); ; at = dirname(at)) {
    const real = realOrUndefined(at);
    if (real !== undefined) return join(real, ...rest);
    if (isLink(at)) return '/';
    rest.unshift(basename(at));
  }
}

function isLink(path: string): boolean {
  try {
    return lstatSync(path).isSymbolicLink();
  } catch {
    return false;
  }
}

function realOrUndefined(path: string): string | undefined {
  try {
    return realpathSync(path);
  } catch {
    return undefined;
  }
}

/**
 * The primary group /etc/passwd gives `uid`, where it is an ordinary group (gid 1000 to 60000);
 * else nobody's (65534). Read at each open: an account's group may change while the server runs.
 */
function primaryGroup(uid: number): number {
  let passwd = '';
  try {
    passwd = readFileSync('/etc/passwd', 'utf8');
  } catch {
    return NOBODY;
  }
  for (const line of passwd.split('\n')) {
    const fields = line.split(':');
    if (fields[2] !== String(uid)) continue;
    const gid = Number(fields[3]);
    return Number.isInteger(gid) && gid >= FIRST_USER_UID && gid <= LAST_USER_UID ? gid : NOBODY;
  }
  return NOBODY;
}
