// Who the code runs as when the server is root, and how its writable directories become
// writable for that uid without staying that way.
//
// Rule: a host directory (policy's HostDirs: an ordinary user's, beneath CODEXEC_ALLOWED_PATHS)
// runs the code as its owner and is never lent: no host tree changes owner. Everything else runs
// as nobody (65534; in landlock mode, a uid of the run's own), and codexec's own workspaces, which
// root owns, are lent to that uid for the run and given back afterwards, with every file the run
// created or changed.
import { closeSync, fchmodSync, fchownSync, fstatSync, lchownSync } from 'node:fs';
import { at, holdsOnly, openRoot, quietly, walkBeneath } from '../../util/index.js';
import type { SandboxSpec } from '../types.js';

export interface Identity {
  readonly uid: number;
  readonly gid: number;
  /**
   * A uid lent to one run (landlock mode's run uids): called once the lease of its workspaces is
   * given back, when nothing of the host is that uid's any more.
   */
  readonly returned?: () => void;
  /**
   * The give-back stopped at a bound (a tree deeper than 64 levels, or of more than 100,000
   * entries): the uid may still own files in its workspaces, and is not handed to another run
   * while they are there.
   */
  readonly kept?: () => void;
}

export const NOBODY: Identity = { uid: 65534, gid: 65534 };

/**
 * Whom a root server runs `spec`'s code as: the owner of its host directory as policy found it
 * (held by descriptor, never looked up again by path), else nobody.
 */
export function identityFor(spec: Pick<SandboxSpec, 'runAs'>): Identity {
  return spec.runAs ?? NOBODY;
}

/** The writable directories codexec made for `spec`, which may be lent: never its host directory. */
export function lendable(spec: Pick<SandboxSpec, 'writablePaths' | 'hostDir'>): readonly string[] {
  return spec.writablePaths.filter((path) => path !== spec.hostDir);
}

interface Owner {
  readonly uid: number;
  readonly gid: number;
}

interface Root extends Owner {
  readonly path: string;
  /** The root's mode when lent: its run may have opened it to everybody. */
  readonly mode: number;
  /** Entries lent, by path relative to the root ('' for the root), with their owner before. */
  readonly loans: Map<string, Owner>;
}

/**
 * A tree lent now, by the device and inode of its root. Runs that share a tree at once
 * (execute_command's workspace, a shared working_dir) as the same uid share its loan: the last of
 * them gives it back. A run that gave it back while another still ran would take its files and
 * its way in (the root's mode is 0700) from under it.
 */
interface Shared {
  readonly root: Root;
  readonly uid: number;
  holders: number;
}
const lentNow = new Map<string, Shared>();

/**
 * Root-owned entries of the writable trees, chowned to the run's uid; `giveBack()` restores them
 * and gives files the run created to the owner of the tree. Both walk from the tree's root by
 * directory fds (util/beneath), never by path: code of another run in the same tree (a shared
 * working_dir, execute_command's workspace) that swaps a directory for a symlink mid-walk makes
 * the walk skip it, never chown the host's files.
 */
export class Lease {
  /** The trees this lease holds, with their key in lentNow where they are shared. */
  private roots: Array<{ readonly root: Root; readonly key?: string }> = [];

  constructor(
    private readonly identity: Identity,
    private readonly maxEntries = 100_000,
  ) {}

  /** Synchronous: runs at spawn time, before the sandbox starts. Never the spec's host directory. */
  lend(spec: Pick<SandboxSpec, 'writablePaths' | 'hostDir'>): void {
    for (const path of lendable(spec)) {
      const rootFd = openRootQuietly(path);
      if (rootFd === undefined) continue; // bwrap reports a missing bind source itself
      try {
        const stat = fstatSync(rootFd);
        const root = this.hold(path, stat);
        if (this.lendable(stat.uid)) {
          fchownSync(rootFd, this.identity.uid, this.identity.gid);
          root.loans.set('', { uid: stat.uid, gid: stat.gid });
        }
        const walk = walkBeneath(rootFd, { maxEntries: this.maxEntries, maxDepth: MAX_DEPTH });
        for (let step = walk.next(false); !step.done; ) {
          const { dirFd, raw, rel, stat: entry } = step.value;
          // A second hard link may live outside the tree (even /etc): never hand that inode over.
          const single = entry.isDirectory() || entry.nlink === 1;
          if (single && this.lendable(entry.uid)) {
            lchownSync(at(dirFd, raw), this.identity.uid, this.identity.gid);
            root.loans.set(rel, { uid: entry.uid, gid: entry.gid });
          }
          step = walk.next(entry.isDirectory());
        }
      } finally {
        closeSync(rootFd);
      }
    }
  }

  /** The loan of the tree at `path` (whose root is `stat`): another run's of the same uid, or a new one. */
  private hold(
    path: string,
    stat: { dev: number; ino: number; uid: number; gid: number; mode: number },
  ): Root {
    const key = `${stat.dev}:${stat.ino}`;
    const held = lentNow.get(key);
    if (held?.uid === this.identity.uid) {
      held.holders++;
      this.roots.push({ root: held.root, key });
      return held.root;
    }
    const root: Root = { path, uid: stat.uid, gid: stat.gid, mode: stat.mode & 0o7777, loans: new Map() };
    // Another uid's loan of the tree (landlock mode's run uids) stays its own.
    if (held) this.roots.push({ root });
    else {
      lentNow.set(key, { root, uid: this.identity.uid, holders: 1 });
      this.roots.push({ root, key });
    }
    return root;
  }

  private lendable(uid: number): boolean {
    return uid === 0 && uid !== this.identity.uid;
  }

  /** Call only once no process of the run is left. Never follows symlinks. */
  async giveBack(): Promise<void> {
    // Not after a failure, nor where a bound stopped the walk (a tree deeper than MAX_DEPTH, or
    // larger than maxEntries): a uid that may still own a file here is never handed to another run.
    if (await this.giveRoots()) this.identity.returned?.();
    else this.identity.kept?.();
  }

  /** Whether every entry was seen (and given back where it was the run's). */
  private async giveRoots(): Promise<boolean> {
    const roots = this.roots;
    this.roots = [];
    let whole = true;
    for (const { root, key } of roots) {
      const held = key === undefined ? undefined : lentNow.get(key);
      if (held && --held.holders > 0) continue; // another run still holds it: the last gives it back
      if (key !== undefined && held) lentNow.delete(key);
      const rootFd = openRootQuietly(root.path);
      if (rootFd === undefined) continue;
      try {
        // A run that left nothing (a fresh workspace's usual case): no walk, µs.
        if (!holdsOnly(at(rootFd), NOTHING)) whole = (await this.giveTree(rootFd, root)) && whole;
        const own = root.loans.get('');
        if (own) {
          quietly(() => fchownSync(rootFd, own.uid, own.gid));
          quietly(() => fchmodSync(rootFd, root.mode));
        }
      } finally {
        closeSync(rootFd);
      }
    }
    return whole;
  }

  private async giveTree(rootFd: number, root: Root): Promise<boolean> {
    const walk = walkBeneath(rootFd, { maxEntries: this.maxEntries, maxDepth: MAX_DEPTH });
    let count = 0;
    let step = walk.next(false);
    for (; !step.done; ) {
      const { dirFd, raw, rel, stat } = step.value;
      if (stat.uid === this.identity.uid) {
        const owner = root.loans.get(rel) ?? root;
        quietly(() => lchownSync(at(dirFd, raw), owner.uid, owner.gid));
      }
      // A big tree: let the event loop run between batches.
      if (++count % YIELD_EVERY === 0) await new Promise((resolve) => setImmediate(resolve));
      step = walk.next(stat.isDirectory());
    }
    return step.value;
  }
}

/**
 * Give every entry beneath `path` (and itself) whose owner `stale` names back to root: what runs of
 * a server that died left lent, before their uids serve again. Walked by directory fds, as giveBack.
 */
export async function reclaimTree(path: string, stale: (uid: number) => boolean): Promise<void> {
  const rootFd = openRootQuietly(path);
  if (rootFd === undefined) return;
  try {
    if (stale(fstatSync(rootFd).uid)) quietly(() => fchownSync(rootFd, 0, 0));
    const walk = walkBeneath(rootFd, { maxEntries: Number.POSITIVE_INFINITY, maxDepth: MAX_DEPTH });
    let count = 0;
    for (let step = walk.next(false); !step.done; ) {
      const { dirFd, raw, stat } = step.value;
      if (stale(stat.uid)) quietly(() => lchownSync(at(dirFd, raw), 0, 0));
      if (++count % YIELD_EVERY === 0) await new Promise((resolve) => setImmediate(resolve));
      step = walk.next(stat.isDirectory());
    }
  } finally {
    closeSync(rootFd);
  }
}

/** Levels walked: each directory is reopened from the root, one name at a time. */
const MAX_DEPTH = 64;
const YIELD_EVERY = 512;
const NOTHING: ReadonlySet<string> = new Set();

function openRootQuietly(path: string): number | undefined {
  try {
    return openRoot(path);
  } catch {
    return undefined;
  }
}
