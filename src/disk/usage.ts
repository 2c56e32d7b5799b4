import { closeSync } from 'node:fs';
import { openRoot, walkBeneath } from '../util/index.js';

export interface DiskUsage {
  /** Bytes of disk the tree's files and directories take (st_blocks), hard links counted once. */
  readonly bytes: number;
  readonly entries: number;
  /** false: the walk stopped at its entry bound, so `bytes` is a lower bound. */
  readonly complete: boolean;
}

/** The most entries one measurement walks: ~50 ms of lstat calls, off the event loop. */
export const MAX_ENTRIES = 50_000;

/**
 * Disk `root` takes, as `du` counts it: allocated blocks, so a sparse file counts what it holds.
 * Walked beneath `root` by directory fds (util/beneath): a link is counted as a link, never
 * followed, and a directory swapped for a link to the host mid-walk is skipped (a walk by path
 * would have measured the host). Entries that vanish meanwhile are skipped.
 */
export async function measureDir(root: string, maxEntries = MAX_ENTRIES): Promise<DiskUsage> {
  let bytes = 0;
  let entries = 0;
  const linked = new Set<number>();
  let rootFd: number;
  try {
    rootFd = openRoot(root);
  } catch {
    return { bytes, entries, complete: true };
  }
  try {
    const walk = walkBeneath(rootFd, { maxEntries, maxDepth: MAX_DEPTH });
    let step = walk.next(false);
    for (; !step.done; step = walk.next(true)) {
      const { stat } = step.value;
      entries++;
      // The walk's calls are synchronous: let the event loop run between batches.
      if (entries % YIELD_EVERY === 0) await new Promise((resolve) => setImmediate(resolve));
      if (!stat.isDirectory() && stat.nlink > 1) {
        if (linked.has(stat.ino)) continue;
        linked.add(stat.ino);
      }
      bytes += stat.blocks * 512;
    }
    return { bytes, entries, complete: step.value };
  } finally {
    closeSync(rootFd);
  }
}

/** Directory levels measured (deeper ones count as not walked: `complete` false). */
const MAX_DEPTH = 256;
const YIELD_EVERY = 512;
