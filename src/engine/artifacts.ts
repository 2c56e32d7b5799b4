import { closeSync } from 'node:fs';
import { openRoot, pathOf, type Root, walkBeneath } from '../util/index.js';
import { isGenerated } from './generated.js';

/**
 * Relative path (posix separators, names as shown: util/names) → size and mtime, for files only;
 * `walkStopped` when a bound of the walk left part of the tree unseen.
 */
export type Snapshot = Map<string, { size: number; mtimeMs: number }> & { walkStopped?: true };

export interface ArtifactDiff {
  created: string[];
  modified: string[];
  deleted: string[];
  /** One of the two walks stopped at a bound: files past it are in no list. */
  walkStopped?: true;
}

export interface SnapshotOptions {
  /** Stop after this many entries (files + directories); the same walk order keeps diffs stable. */
  readonly maxEntries?: number;
  readonly maxDepth?: number;
  /** Top-level names to leave out (the temp script file). */
  readonly exclude?: ReadonlySet<string>;
  /**
   * `root` is a workspace codexec made (`exec_*`, `sess_*`), which only the server can rename:
   * its own entries are read by path (util/beneath WalkOptions.rootPath). Not for a caller's
   * working_dir, whose parent other runs may be able to change.
   */
  readonly ownWorkspace?: boolean;
}

/**
 * Walk `root` breadth-first in sorted order, bounded, beneath it by directory fds (a directory
 * swapped for a symlink mid-walk is skipped, never followed: util/beneath); generated files and
 * caches (isGenerated) are neither listed nor walked.
 */
export async function snapshotDir(root: Root, options: SnapshotOptions = {}): Promise<Snapshot> {
  const { maxEntries = 10_000, maxDepth = 12, exclude } = options;
  const snapshot: Snapshot = new Map();
  let rootFd: number;
  try {
    rootFd = openRoot(root);
  } catch {
    return snapshot; // unreadable or vanished: nothing to report
  }
  try {
    const walk = walkBeneath(rootFd, {
      maxEntries,
      maxDepth,
      ...(options.ownWorkspace && { rootPath: pathOf(root) }),
    });
    let count = 0;
    let step = walk.next(false);
    while (!step.done) {
      const { name, rel, stat, depth } = step.value;
      const skip = (depth === 0 && exclude?.has(name)) || isGenerated(name);
      if (!skip && !stat.isDirectory()) snapshot.set(rel, { size: stat.size, mtimeMs: stat.mtimeMs });
      if (++count % YIELD_EVERY === 0) await new Promise((resolve) => setImmediate(resolve));
      step = walk.next(!skip);
    }
    if (!step.value) snapshot.walkStopped = true;
  } finally {
    closeSync(rootFd);
  }
  return snapshot;
}

/** Entries listed between two turns of the event loop. */
const YIELD_EVERY = 512;

export function diffSnapshots(before: Snapshot, after: Snapshot): ArtifactDiff {
  const created: string[] = [];
  const modified: string[] = [];
  const deleted: string[] = [];
  for (const [path, now] of after) {
    const then = before.get(path);
    if (!then) created.push(path);
    else if (then.size !== now.size || then.mtimeMs !== now.mtimeMs) modified.push(path);
  }
  for (const path of before.keys()) if (!after.has(path)) deleted.push(path);
  return before.walkStopped || after.walkStopped
    ? { created, modified, deleted, walkStopped: true }
    : { created, modified, deleted };
}
