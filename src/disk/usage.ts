import { lstat, readdir } from 'node:fs/promises';
import { join } from 'node:path';

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
 * Symbolic links are counted as links, never followed (a link to a host directory is not the
 * workspace's); entries that vanish meanwhile are skipped.
 */
export async function measureDir(root: string, maxEntries = MAX_ENTRIES): Promise<DiskUsage> {
  let bytes = 0;
  let entries = 0;
  const linked = new Set<number>();
  const dirs = [root];
  for (let dir = dirs.pop(); dir !== undefined; dir = dirs.pop()) {
    let names: string[];
    try {
      names = await readdir(dir);
    } catch {
      continue;
    }
    for (const name of names) {
      if (++entries > maxEntries) return { bytes, entries: maxEntries, complete: false };
      const path = join(dir, name);
      try {
        const stat = await lstat(path);
        if (stat.isDirectory()) dirs.push(path);
        else if (stat.nlink > 1) {
          if (linked.has(stat.ino)) continue;
          linked.add(stat.ino);
        }
        bytes += stat.blocks * 512;
      } catch {
        // vanished between readdir and lstat
      }
    }
  }
  return { bytes, entries, complete: true };
}
