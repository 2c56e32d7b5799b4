// Who the code runs as when the server is root, and how its writable directories become
// writable for that uid without staying that way.
//
// Rule: a working directory owned by a regular user runs the code as that user (it could write
// there anyway, and its outputs stay theirs), never with group root. Anything else runs as nobody
// (65534). Writable directories owned by root (the engine's per-run workspace, a root-owned
// working_dir) are lent to that uid for the run and given back afterwards, with every file the
// run created or changed.
import { lchownSync, lstatSync, readdirSync, statSync } from 'node:fs';
import { lchown, lstat, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { holdsOnly, quietly } from '../../util/index.js';

export interface Identity {
  readonly uid: number;
  readonly gid: number;
}

export const NOBODY: Identity = { uid: 65534, gid: 65534 };

/**
 * The uid/gid for a run whose working directory is `cwd` (server running as root). Never group
 * root either: a user's directory whose group is root runs as that user and nobody's group.
 */
export function identityFor(cwd: string, fallback: Identity = NOBODY): Identity {
  const owner = statSync(cwd, { throwIfNoEntry: false });
  if (!owner || owner.uid === 0) return fallback;
  return { uid: owner.uid, gid: owner.gid !== 0 ? owner.gid : fallback.gid };
}

interface Loan {
  readonly path: string;
  readonly uid: number;
  readonly gid: number;
}

/**
 * Root-owned entries of the writable trees, chowned to the run's uid; `giveBack()` restores them
 * and gives files the run created to the owner of the directory they were created in.
 */
export class Lease {
  private loans: Loan[] = [];
  private roots: Loan[] = [];

  constructor(
    private readonly identity: Identity,
    private readonly maxEntries = 100_000,
  ) {}

  /** Synchronous: runs at spawn time, before the sandbox starts. */
  lend(paths: readonly string[]): void {
    let seen = 0;
    for (const root of paths) {
      const stat = lstatSync(root, { throwIfNoEntry: false });
      if (!stat?.isDirectory()) continue; // bwrap reports a missing bind source itself
      this.roots.push({ path: root, uid: stat.uid, gid: stat.gid });
      let level = [root];
      this.lendOne(root, stat.uid, stat.gid);
      while (level.length > 0 && seen < this.maxEntries) {
        const next: string[] = [];
        for (const dir of level) {
          for (const name of safeReaddirSync(dir)) {
            if (++seen > this.maxEntries) break;
            const path = join(dir, name);
            const entry = lstatSync(path, { throwIfNoEntry: false });
            if (!entry) continue;
            // A second hard link may live outside the tree (even /etc): never hand that inode over.
            if (!entry.isDirectory() && entry.nlink > 1) continue;
            this.lendOne(path, entry.uid, entry.gid);
            if (entry.isDirectory()) next.push(path);
          }
        }
        level = next;
      }
    }
  }

  private lendOne(path: string, uid: number, gid: number): void {
    if (uid !== 0 || uid === this.identity.uid) return;
    lchownSync(path, this.identity.uid, this.identity.gid);
    this.loans.push({ path, uid, gid });
  }

  /** Call only once no process of the run is left. Never follows symlinks. */
  async giveBack(): Promise<void> {
    const loans = this.loans;
    const roots = this.roots;
    this.loans = [];
    this.roots = [];
    const lent = new Set(loans.map((loan) => loan.path));
    for (const root of roots) if (!holdsOnly(root.path, NOTHING)) await this.giveNewFiles(root, lent);
    // A few calls (a run's fresh workspace: one) on this thread; a big tree through the pool.
    if (loans.length <= SYNC_LOANS)
      for (const loan of loans) quietly(() => lchownSync(loan.path, loan.uid, loan.gid));
    else for (const loan of loans) await lchown(loan.path, loan.uid, loan.gid).catch(() => {});
  }

  private async giveNewFiles(root: Loan, lent: ReadonlySet<string>): Promise<void> {
    let seen = 0;
    let level = [root.path];
    while (level.length > 0 && seen < this.maxEntries) {
      const next: string[] = [];
      for (const dir of level) {
        const names = await readdir(dir).catch(() => [] as string[]);
        for (const name of names) {
          if (++seen > this.maxEntries) break;
          const path = join(dir, name);
          const stat = await lstat(path).catch(() => undefined);
          if (!stat) continue;
          if (stat.uid === this.identity.uid && !lent.has(path)) {
            await lchown(path, root.uid, root.gid).catch(() => {});
          }
          if (stat.isDirectory()) next.push(path);
        }
      }
      level = next;
    }
  }
}

/** Loans given back with synchronous calls (µs each, where the thread pool costs ~0.3 ms a call). */
const SYNC_LOANS = 16;
const NOTHING: ReadonlySet<string> = new Set();

function safeReaddirSync(dir: string): string[] {
  try {
    return readdirSync(dir);
  } catch {
    return [];
  }
}
