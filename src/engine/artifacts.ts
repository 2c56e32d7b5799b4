import { lstat, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { isGenerated } from './generated.js';

/** Relative path (posix separators) → size and mtime, for files only. */
export type Snapshot = Map<string, { size: number; mtimeMs: number }>;

export interface ArtifactDiff {
  created: string[];
  modified: string[];
  deleted: string[];
}

export interface SnapshotOptions {
  /** Stop after this many entries (files + directories); the same walk order keeps diffs stable. */
  readonly maxEntries?: number;
  readonly maxDepth?: number;
  /** Top-level names to leave out (the temp script file). */
  readonly exclude?: ReadonlySet<string>;
}

/**
 * Walk `root` breadth-first in sorted order, bounded, not following symlinks; generated files
 * and caches (isGenerated) are neither listed nor walked.
 */
export async function snapshotDir(root: string, options: SnapshotOptions = {}): Promise<Snapshot> {
  const { maxEntries = 10_000, maxDepth = 12, exclude } = options;
  const snapshot: Snapshot = new Map();
  let seen = 0;
  let level: string[] = [''];
  for (let depth = 0; depth <= maxDepth && level.length > 0; depth++) {
    const next: string[] = [];
    for (const rel of level) {
      let names: string[];
      try {
        names = (await readdir(join(root, rel))).sort();
      } catch {
        continue; // unreadable or vanished directory: nothing to report inside it
      }
      for (const name of names) {
        if ((depth === 0 && exclude?.has(name)) || isGenerated(name)) continue;
        if (++seen > maxEntries) return snapshot;
        const path = rel === '' ? name : `${rel}/${name}`;
        try {
          const stat = await lstat(join(root, path));
          if (stat.isDirectory()) next.push(path);
          else snapshot.set(path, { size: stat.size, mtimeMs: stat.mtimeMs });
        } catch {
          // vanished between readdir and lstat
        }
      }
    }
    level = next;
  }
  return snapshot;
}

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
  return { created, modified, deleted };
}
