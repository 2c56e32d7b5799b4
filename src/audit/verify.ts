import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { checkLine, GENESIS } from './chain.js';
import { ANCHOR_FILE, listAuditFiles } from './files.js';
import { readAnchor } from './retention.js';

export interface AuditPlace {
  readonly file: string;
  /** 1-based line number in the file. */
  readonly line: number;
}

export interface VerifyReport {
  readonly ok: boolean;
  readonly files: number;
  readonly entries: number;
  /** Where the chain starts: the genesis hash, or the anchor retention left. */
  readonly start_hash: string;
  /** The hash of the last entry: note it elsewhere to detect a later truncation. */
  readonly last_hash: string;
  /** Lines torn by a writer that died mid-write; the chain continues across them. */
  readonly torn: readonly AuditPlace[];
  /** The first line that breaks the chain, and why. */
  readonly bad?: AuditPlace & { readonly reason: string };
}

/**
 * Walk every audit file in `dir`, oldest first, checking each entry's hash and its link to the
 * entry before (across files too). The chain starts at the genesis hash, or at the anchor that
 * retention wrote when it removed older files.
 */
export function verifyAudit(dir: string): VerifyReport {
  const files = listAuditFiles(dir);
  let anchor: ReturnType<typeof readAnchor>;
  let anchorError: string | undefined;
  try {
    anchor = readAnchor(dir);
  } catch (error) {
    anchorError = (error as Error).message;
  }
  const start = anchor?.last_hash ?? GENESIS;
  let prev = start;
  let entries = 0;
  const torn: AuditPlace[] = [];
  const report = (bad?: VerifyReport['bad']): VerifyReport => ({
    ok: bad === undefined,
    files: files.length,
    entries,
    start_hash: start,
    last_hash: prev,
    torn,
    ...(bad && { bad }),
  });
  if (anchorError) return report({ file: ANCHOR_FILE, line: 1, reason: anchorError });
  for (const file of files) {
    const lines = readFileSync(join(dir, file), 'utf8').split('\n');
    if (lines.at(-1) === '') lines.pop();
    for (const [index, text] of lines.entries()) {
      const place = { file, line: index + 1 };
      const checked = checkLine(text);
      if (!checked.ok) {
        // Unreadable JSON is what a writer killed mid-line leaves; the next entry must still
        // link to the one before it, so a removed or altered entry cannot hide as "torn".
        if (checked.torn) {
          torn.push(place);
          continue;
        }
        return report({ ...place, reason: checked.reason });
      }
      if (checked.prevHash !== prev) {
        const expected = entries === 0 && !anchor ? 'the genesis hash' : `the previous entry's hash`;
        return report({ ...place, reason: `prev_hash does not match ${expected} (${prev.slice(0, 12)}…)` });
      }
      prev = checked.hash;
      entries++;
    }
  }
  return report();
}
