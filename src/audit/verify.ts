import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { type AnchorDay, type AnchorFile, anchorSigned, readAnchorFile } from './anchor.js';
import { checkLine, GENESIS } from './chain.js';
import { ANCHOR_FILE, dayFile, fileDay, listAuditFiles } from './files.js';
import { hmacMatches, readKey } from './key.js';

export interface AuditPlace {
  readonly file: string;
  /** 1-based line number in the file; 0: the file as a whole (missing, unreadable). */
  readonly line: number;
}

export interface VerifyReport {
  readonly ok: boolean;
  readonly files: number;
  readonly entries: number;
  /** Entries without an HMAC, written before entries were signed: accepted only before the first signed one. */
  readonly unsigned: number;
  /** Valid signed entries past what the anchor records: a writer's last burst (running, or killed). */
  readonly past_anchor: number;
  /** Where the chain starts: the genesis hash, or where retention's removals end. */
  readonly start_hash: string;
  /** The hash of the last entry. */
  readonly last_hash: string;
  /** Lines torn by a writer that died mid-write; the chain continues across them. */
  readonly torn: readonly AuditPlace[];
  /** The first place that breaks the trail, and why. */
  readonly bad?: AuditPlace & { readonly reason: string };
}

/**
 * Walk every audit file in `dir`, oldest first: each entry's hash, its HMAC under the key in
 * `keyFile`, its link to the entry before (across files too), and each day against the anchor
 * (its file present, at least the count it records, the last hash it records). Retention writes
 * the anchor before it removes files, so a report read across that is taken again.
 */
export function verifyAudit(dir: string, keyFile: string): VerifyReport {
  for (let tries = 1; ; tries++) {
    const before = anchorText(dir);
    const report = verifyOnce(dir, keyFile);
    if (report.ok || tries === 3 || anchorText(dir) === before) return report;
  }
}

function anchorText(dir: string): string {
  try {
    return readFileSync(join(dir, ANCHOR_FILE), 'utf8');
  } catch {
    return '';
  }
}

type Bad = NonNullable<VerifyReport['bad']>;

function verifyOnce(dir: string, keyFile: string): VerifyReport {
  let anchorFile: AnchorFile = { kind: 'none' };
  const state = {
    files: 0,
    entries: 0,
    unsigned: 0,
    past_anchor: 0,
    start_hash: GENESIS,
    last_hash: GENESIS,
  };
  const torn: AuditPlace[] = [];
  const report = (bad?: Bad): VerifyReport => ({
    ok: bad === undefined,
    ...state,
    torn,
    ...(bad && { bad }),
  });
  let key: Buffer | undefined;
  try {
    key = readKey(keyFile);
  } catch (error) {
    return report({ file: keyFile, line: 0, reason: (error as Error).message });
  }
  try {
    anchorFile = readAnchorFile(dir);
  } catch (error) {
    return report({ file: ANCHOR_FILE, line: 0, reason: (error as Error).message });
  }
  if (anchorFile.kind === 'signed') {
    if (!key) return report({ file: ANCHOR_FILE, line: 1, reason: `signed, but ${keyFile} is missing` });
    if (!anchorSigned(anchorFile, key)) {
      return report({
        file: ANCHOR_FILE,
        line: 1,
        reason: 'its HMAC does not match: edited without the key',
      });
    }
  }
  const anchor = anchorFile.kind === 'none' ? undefined : anchorFile.anchor;
  // The key is made with the anchor, by the first signed entry: a key beside audit files but no
  // signed anchor means the anchor (and perhaps the signed entries after older ones) went.
  if (key && anchorFile.kind !== 'signed' && listAuditFiles(dir).length > 0) {
    const what = anchorFile.kind === 'none' ? 'missing' : 'unsigned';
    return report({
      file: ANCHOR_FILE,
      line: 0,
      reason: `${what}, though the trail is signed (${keyFile} exists)`,
    });
  }
  const recorded = anchorFile.kind === 'signed' ? anchorFile.anchor.days : {};
  const lastRecorded = Object.keys(recorded).sort().at(-1);
  state.start_hash = state.last_hash = anchor?.start_hash ?? GENESIS;
  // Files up to removed_through are retention's, left by a crash between anchor and removal
  // (only a signed anchor is trusted to say which: an unsigned one could hide any file).
  const removed = (anchorFile.kind === 'signed' && anchorFile.anchor.removed_through) || '';
  const files = listAuditFiles(dir).filter((name) => name > removed);
  state.files = files.length;
  const days = [...new Set([...files.map(fileDay), ...Object.keys(recorded)])].sort();
  let signedSeen = false;

  for (const day of days) {
    const file = dayFile(day);
    const record: AnchorDay | undefined = recorded[day];
    if (!files.includes(file)) {
      return report({
        file,
        line: 0,
        reason: `missing: ${ANCHOR_FILE} records ${record?.count} entries for this day`,
      });
    }
    const lines = readFileSync(join(dir, file), 'utf8').split('\n');
    if (lines.at(-1) === '') lines.pop();
    let count = 0;
    let tornSinceEntry: number | undefined; // the first torn line after the day's last entry
    for (const [index, text] of lines.entries()) {
      const place = { file, line: index + 1 };
      const checked = checkLine(text);
      if (!checked.ok) {
        // Unreadable JSON is what a writer killed mid-line leaves; the next entry must still
        // link to the one before it, so a removed or altered entry cannot hide as "torn".
        if (!checked.torn) return report({ ...place, reason: checked.reason });
        torn.push(place);
        tornSinceEntry ??= place.line;
        continue;
      }
      tornSinceEntry = undefined;
      if (checked.hmac === undefined) {
        if (signedSeen)
          return report({ ...place, reason: 'no hmac after signed entries: rewritten without the key' });
        state.unsigned++;
      } else {
        if (!key) return report({ ...place, reason: `signed, but ${keyFile} is missing` });
        if (!hmacMatches(key, checked.hash, checked.hmac)) {
          return report({
            ...place,
            reason: 'hmac does not match: the entry was changed (its sha256 recomputed)',
          });
        }
        signedSeen = true;
      }
      if (checked.prevHash !== state.last_hash) {
        const expected = state.entries === 0 && !anchor ? 'the genesis hash' : `the previous entry's hash`;
        return report({
          ...place,
          reason: `prev_hash does not match ${expected} (${state.last_hash.slice(0, 12)}…)`,
        });
      }
      state.last_hash = checked.hash;
      state.entries++;
      count++;
      if (record && count === record.count && checked.hash !== record.last_hash) {
        return report({
          ...place,
          reason: `not the entry ${ANCHOR_FILE} records as this day's entry ${count}`,
        });
      }
      const past = record ? count > record.count : lastRecorded === undefined || day > lastRecorded;
      if (past && checked.hmac !== undefined) state.past_anchor++;
    }
    if (record && count < record.count) {
      return report({
        file,
        line: tornSinceEntry ?? lines.length + 1,
        reason: `${ANCHOR_FILE} records ${record.count} entries for this day, the file holds ${count}: the last were removed or cut`,
      });
    }
  }
  return report();
}
