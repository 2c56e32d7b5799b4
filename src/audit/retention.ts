import { closeSync, fstatSync, openSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import { ANCHOR_FILE, auditFileDay, listAuditFiles } from './files.js';
import { lastEntry } from './tail.js';

const DAY_MS = 86_400_000;

const anchorSchema = z.object({ removed_through: z.string(), last_hash: z.string().regex(/^[0-9a-f]{64}$/) });
export type Anchor = z.infer<typeof anchorSchema>;

/**
 * Remove audit files whose whole day is older than `days`. Before any goes, the last hash of the
 * newest one removed is written to the anchor file, where the remaining chain now starts; a file
 * whose entries cannot be read is kept (the chain would lose its start).
 */
export function pruneAuditFiles(dir: string, days: number, nowMs: number): string[] {
  const cutoff = nowMs - days * DAY_MS;
  const expired = listAuditFiles(dir).filter((name) => auditFileDay(name) + DAY_MS <= cutoff);
  const newest = expired.at(-1);
  if (newest === undefined) return [];
  const fd = openSync(join(dir, newest), 'r');
  let last: ReturnType<typeof lastEntry>;
  try {
    last = lastEntry(fd, fstatSync(fd).size);
  } finally {
    closeSync(fd);
  }
  if (last) writeAnchor(dir, { removed_through: newest, last_hash: last.hash });
  // A file with no valid entry adds nothing to the chain; removing it keeps the anchor as it was.
  for (const name of expired) rmSync(join(dir, name), { force: true });
  return expired;
}

export function readAnchor(dir: string): Anchor | undefined {
  let text: string;
  try {
    text = readFileSync(join(dir, ANCHOR_FILE), 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
  const parsed = anchorSchema.safeParse(JSON.parse(text));
  if (!parsed.success) throw new Error(`${ANCHOR_FILE} is not a valid anchor`);
  return parsed.data;
}

export const readAnchorHash = (dir: string) => readAnchor(dir)?.last_hash;

function writeAnchor(dir: string, anchor: Anchor): void {
  const temp = join(dir, `.${ANCHOR_FILE}.${process.pid}`);
  writeFileSync(temp, `${JSON.stringify(anchor)}\n`, { mode: 0o600 });
  renameSync(temp, join(dir, ANCHOR_FILE));
}
