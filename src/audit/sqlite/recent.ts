import { closeSync, fstatSync, openSync, readSync } from 'node:fs';
import { join } from 'node:path';
import { type AuditRow, viewOf } from '../store.js';
import { listAuditFiles } from './files.js';

/** How much of the newest audit file is read for the view: its last entries, not the whole day. */
const TAIL_BYTES = 1024 * 1024;
/**
 * The newest entries `principal` may see (undefined: all), newest first, from the last megabyte
 * of the newest audit file. Entries written before they named a principal show to admins only.
 */
export function recentFromFiles(dir: string, principal: string | undefined, max: number): AuditRow[] {
  const newest = listAuditFiles(dir).at(-1);
  if (newest === undefined) return [];
  const rows: AuditRow[] = [];
  for (const line of tail(join(dir, newest)).split('\n').reverse()) {
    if (rows.length === max) break;
    let entry: AuditRow;
    try {
      entry = JSON.parse(line) as AuditRow;
    } catch {
      continue; // the cut first line, or one torn by a writer that died
    }
    if (principal !== undefined && entry.principal !== principal) continue;
    rows.push(viewOf(entry));
  }
  return rows;
}

function tail(path: string): string {
  const fd = openSync(path, 'r');
  try {
    const size = fstatSync(fd).size;
    const length = Math.min(size, TAIL_BYTES);
    const buffer = Buffer.alloc(length);
    readSync(fd, buffer, 0, length, size - length);
    return buffer.toString('utf8');
  } finally {
    closeSync(fd);
  }
}
