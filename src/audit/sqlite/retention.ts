import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { auditFileDay, listAuditFiles } from './files.js';
import type { AnchorKeeper } from './keeper.js';
import { lastEntryOf } from './tail.js';

const DAY_MS = 86_400_000;

/**
 * Remove audit files whose whole day is older than `days`. Before any goes, the anchor records
 * the last hash of what is removed (where the remaining chain now starts) and forgets those days,
 * so verify does not take a removal by retention for tampering. Nothing is removed while the
 * anchor cannot be written (it failed its check: the files are evidence).
 */
export function pruneAuditFiles(dir: string, days: number, nowMs: number, anchor: AnchorKeeper): string[] {
  const cutoff = nowMs - days * DAY_MS;
  const expired = listAuditFiles(dir).filter((name) => auditFileDay(name) + DAY_MS <= cutoff);
  const newest = expired.at(-1);
  if (newest === undefined) return [];
  // A file with no valid entry adds nothing to the chain: the last entry is in an older one.
  let lastHash: string | undefined;
  for (const name of [...expired].reverse()) {
    lastHash = lastEntryOf(dir, name)?.hash;
    if (lastHash) break;
  }
  if (!anchor.prune(newest, lastHash)) return [];
  for (const name of expired) rmSync(join(dir, name), { force: true });
  return expired;
}
