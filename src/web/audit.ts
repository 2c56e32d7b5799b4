import { closeSync, fstatSync, openSync, readSync } from 'node:fs';
import { join } from 'node:path';
import { KEY_FILE, listAuditFiles, type VerifyReport, verifyAudit } from '../audit/index.js';
import type { Config } from '../config/index.js';

/** How much of the newest audit file is read for the view: its last entries, not the whole day. */
const TAIL_BYTES = 1024 * 1024;
const MAX_ENTRIES = 100;

/** An audit entry as the view shows it (the chain's fields, less the hashes). */
export interface AuditRow {
  readonly at: string;
  readonly principal: string | null;
  readonly tool: string;
  readonly runtime: string;
  readonly execution_id: string | null;
  readonly session_id: string | null;
  readonly input_code: string;
  readonly exit_code: number | null;
  readonly approved: boolean;
  readonly approved_by: string | null;
  readonly rule: string | null;
}

/**
 * The newest entries `principal` may see (undefined: all), newest first, from the last megabyte
 * of the newest audit file. Entries written before they named a principal show to admins only.
 */
export function recentAudit(config: Config, principal: string | undefined): AuditRow[] {
  const newest = listAuditFiles(config.logDir).at(-1);
  if (newest === undefined) return [];
  const rows: AuditRow[] = [];
  for (const line of tail(join(config.logDir, newest)).split('\n').reverse()) {
    if (rows.length === MAX_ENTRIES) break;
    let entry: AuditRow;
    try {
      entry = JSON.parse(line) as AuditRow;
    } catch {
      continue; // the cut first line, or one torn by a writer that died
    }
    if (principal !== undefined && entry.principal !== principal) continue;
    const {
      at,
      tool,
      runtime,
      execution_id,
      session_id,
      input_code,
      exit_code,
      approved,
      approved_by,
      rule,
    } = entry;
    rows.push({
      at,
      principal: entry.principal ?? null,
      tool,
      runtime,
      execution_id,
      session_id,
      input_code: input_code.slice(0, 300),
      exit_code,
      approved,
      approved_by,
      rule,
    });
  }
  return rows;
}

/** `codexec audit verify` for the page: the whole trail's chain, HMACs and anchor (read in full). */
export function verifyTrail(config: Config): VerifyReport {
  return verifyAudit(config.logDir, join(config.home, KEY_FILE));
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
