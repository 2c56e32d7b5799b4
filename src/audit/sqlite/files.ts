import { readdirSync } from 'node:fs';
import { isoTime } from '../../util/index.js';

// The audit files: one per UTC day, `audit-YYYY-MM-DD.jsonl` in the log directory, and the anchor
// that records each day's count and last hash.

const AUDIT_FILE = /^audit-(\d{4}-\d{2}-\d{2})\.jsonl$/;

/** The anchor file (anchor.ts): where the chain starts and each day's count and last hash. */
export const ANCHOR_FILE = 'audit-anchor.json';
/** The audit key's file name, in CODEXEC_HOME (outside the log directory). */
export const KEY_FILE = 'audit.key';
/** Held while an entry is chained and appended, by whichever process sharing the dir writes. */
export const LOCK_FILE = 'audit.lock';

export const auditFileName = (at: Date) => `audit-${isoTime(at).slice(0, 10)}.jsonl`;
/** The file of a UTC day (`YYYY-MM-DD`), and the day of a file name. */
export const dayFile = (day: string) => `audit-${day}.jsonl`;
export const fileDay = (name: string) => name.slice('audit-'.length, -'.jsonl'.length);

/** The audit files in `dir`, oldest first (the names sort by date). */
export function listAuditFiles(dir: string): string[] {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw error;
  }
  return names.filter((name) => AUDIT_FILE.test(name)).sort();
}

/** Midnight UTC of an audit file's day, in ms. */
export function auditFileDay(name: string): number {
  const match = AUDIT_FILE.exec(name);
  return match ? Date.parse(`${match[1]}T00:00:00Z`) : Number.NaN;
}
