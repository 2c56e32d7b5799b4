// The uids of a root server's landlock runs: one of its own for each run. Landlock checks no
// change of a file's mode, times or extended attributes, and landlock mode binds nothing: had
// runs one uid between them, the code of one could chmod another's workspace (its files lent to
// that uid) by path, or reset their times. A uid owns only its own run's workspaces, on loan.
// Which block of the range a server takes: uid-blocks.ts.
import { lstatSync } from 'node:fs';
import { SandboxUnavailableError } from '../../errors/index.js';
import type { Identity } from '../host/index.js';

/**
 * The range runs' uids come from: above the ranges useradd hands out to login users and their
 * subordinate ids (up to 600100000) and systemd's container ranges (up to 1879048191), below
 * systemd's foreign range (0x7FFE0000) and the 2^31 where tools that hold a uid in a signed int
 * break. No account names them.
 */
export const RANGE = { first: 0x7000_0000, end: 0x7ffe_0000 } as const;
/** Uids in a server's block: runs it may hold at once (warm processes, runs, sessions). */
export const BLOCK_SIZE = 4096;
export const BLOCKS = Math.floor((RANGE.end - RANGE.first) / BLOCK_SIZE);
/**
 * Every run's group: the range's first id, as a gid no host group has (not nogroup, which daemons
 * run as). Directories runs must search are lent to this group, not per uid, so no host process
 * gains that search.
 */
export const RUN_GID = RANGE.first;
/** Stands for every run where what a run may reach is checked (the group's search is what counts). */
export const ANY_RUN: Identity = { uid: RANGE.first, gid: RUN_GID };

/**
 * A run's identity, taken from RunUids: `returned()` once its workspaces are given back, `kept()`
 * when a bound stopped that (the uid then serves again only once those workspaces are gone).
 */
export interface RunIdentity extends Identity {
  returned(): void;
  kept(): void;
}

/** Whether `uid` is a run's own: not a login user's. */
export function isRunUid(uid: number): boolean {
  return uid >= RANGE.first && uid < RANGE.end;
}

/** A block of the range, this server's until it is released (or the server ends). */
export interface UidBlock {
  readonly first: number;
  readonly count: number;
  /** Let the block go; its lock file stays: none of its uids serves again (they may own files). */
  release(): void;
  /** Let it go to serve again: only once every uid of it was given back whole. */
  retire(): void;
  /** Let a dead server's block go for good: marked, so no server probes or serves it again. */
  bury(): void;
}

/** The uids of one server's runs, from its block. */
export class RunUids {
  /** Trees on loan, by path: the uid they are lent to and how many runs hold them. */
  private readonly trees = new Map<string, { readonly uid: number; holders: number }>();
  /** Uids taken, with how many runs hold each. */
  private readonly taken = new Map<number, number>();
  /**
   * Uids a give-back left owning files (a bound stopped it), with the trees they were lent: still
   * taken (a later run writing one of those trees shares the uid, and so reaches its files), until
   * every one of the trees is gone — a uid owns files only in the trees it was lent.
   */
  private readonly keptOut = new Map<number, Set<string>>();
  private next = 0;

  constructor(private readonly range: Pick<UidBlock, 'first' | 'count'>) {}

  /**
   * The identity of a run that writes `trees` (its lendable workspaces): the uid one of them is on
   * loan to already (runs sharing a tree, as commands in one workspace, share its owner), else a
   * uid no run holds, the next in turn (so a uid just returned is the last to come again).
   */
  take(trees: readonly string[]): RunIdentity {
    const uid =
      trees.map((tree) => this.trees.get(tree)?.uid).find((held) => held !== undefined) ?? this.fresh();
    const held: string[] = [];
    for (const tree of trees) {
      const loan = this.trees.get(tree);
      if (loan && loan.uid !== uid) continue; // lent to another run's uid: this one cannot own it
      if (loan) loan.holders++;
      else this.trees.set(tree, { uid, holders: 1 });
      held.push(tree);
    }
    this.taken.set(uid, (this.taken.get(uid) ?? 0) + 1);
    let returned = false;
    return {
      uid,
      gid: RUN_GID,
      kept: () => {
        if (returned) return;
        returned = true;
        const trees = this.keptOut.get(uid) ?? new Set<string>();
        for (const tree of held) trees.add(tree);
        this.keptOut.set(uid, trees);
      },
      returned: () => {
        if (returned) return;
        returned = true;
        for (const tree of held) {
          const loan = this.trees.get(tree);
          if (loan && --loan.holders === 0) this.trees.delete(tree);
        }
        const holders = (this.taken.get(uid) ?? 1) - 1;
        if (holders === 0) this.taken.delete(uid);
        else this.taken.set(uid, holders);
      },
    };
  }

  /** How many uids runs hold now. */
  get inUse(): number {
    return this.taken.size;
  }

  private fresh(): number {
    for (let tried = 0; tried < this.range.count; tried++) {
      const uid = this.range.first + this.next;
      this.next = (this.next + 1) % this.range.count;
      if (!this.taken.has(uid)) return uid;
    }
    const freed = this.freeKept();
    if (freed !== undefined) return freed;
    const kept = this.keptOut.size;
    throw new SandboxUnavailableError(
      `all ${this.range.count} uids of this server's landlock runs are in use: ${this.taken.size - kept} by ` +
        `runs and sessions that have not ended${kept > 0 ? `, ${kept} by the files of workspaces runs left too deep (over 64 levels) or too large (over 100,000 entries) to give back, which serve again once those workspaces are removed (CODEXEC_WORKSPACE_RETENTION_HOURS)` : ''}; end some runs or sessions`,
    );
  }

  /** A kept uid whose trees are all gone (a kept workspace removed): it owns nothing any more. */
  private freeKept(): number | undefined {
    for (const [uid, trees] of this.keptOut) {
      if ([...trees].some(exists)) continue;
      this.keptOut.delete(uid);
      this.taken.delete(uid);
      for (const tree of trees) if (this.trees.get(tree)?.uid === uid) this.trees.delete(tree);
      return uid;
    }
    return undefined;
  }
}

/** Whether `path` is there (anything but "no such file" counts as there). */
function exists(path: string): boolean {
  try {
    lstatSync(path);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code !== 'ENOENT';
  }
}
