import { readdirSync } from 'node:fs';

// The audit files: one per UTC day, `audit-YYYY-MM-DD.jsonl` in the log directory, and the anchor
// retention leaves when it removes the oldest ones.

const AUDIT_FILE = /^audit-(\d{4}-\d{2}-\d{2})\.jsonl$/;

/** The anchor file: the last hash of the newest audit file retention removed. */
export const ANCHOR_FILE = 'audit-anchor.json';
/** Held while an entry is chained and appended, by whichever process sharing the dir writes. */
export const LOCK_FILE = 'audit.lock';

export const auditFileName = (at: Date) => `audit-${at.toISOString().slice(0, 10)}.jsonl`;

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
