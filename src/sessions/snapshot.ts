import { lstatSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { isGenerated, type Snapshot, snapshotDir } from '../engine/index.js';

/** Entries a synchronous walk may visit before it hands over to the engine's async walk. */
const SYNC_LIMIT = 256;

/**
 * The working directory's snapshot, as the engine's `snapshotDir` takes it (breadth-first,
 * sorted, symlinks not followed). A session directory is usually tiny, and two trips through
 * libuv's thread pool per send cost more than the walk itself under load, so small trees are
 * walked synchronously; past SYNC_LIMIT entries the bounded async walk takes over.
 */
export async function snapshotWorkingDir(root: string): Promise<Snapshot> {
  return walkSmall(root) ?? snapshotDir(root);
}

function walkSmall(root: string): Snapshot | undefined {
  const snapshot: Snapshot = new Map();
  let seen = 0;
  let level: string[] = [''];
  for (let depth = 0; depth <= 12 && level.length > 0; depth++) {
    const next: string[] = [];
    for (const rel of level) {
      let names: string[];
      try {
        names = readdirSync(join(root, rel)).sort();
      } catch {
        continue;
      }
      for (const name of names) {
        if (isGenerated(name)) continue; // as snapshotDir does
        if (++seen > SYNC_LIMIT) return undefined;
        const path = rel === '' ? name : `${rel}/${name}`;
        try {
          const stat = lstatSync(join(root, path));
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
