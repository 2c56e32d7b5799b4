import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { checkLine, GENESIS, type LineCheck } from '../chain.js';
import { hmacMatches, readKey } from '../key.js';
import { type AnchorDay, type AnchorFile, anchorSigned, readAnchorFile } from './anchor.js';
import { ANCHOR_FILE, dayFile, fileDay, listAuditFiles } from './files.js';

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

/** Thrown inside the walk at the first bad place; verifyOnce turns it into the report. */
class Broken extends Error {
  constructor(readonly bad: Bad) {
    super(`${bad.file}:${bad.line}: ${bad.reason}`);
    this.name = 'Broken';
  }
}
const broken = (file: string, line: number, reason: string) => new Broken({ file, line, reason });

function verifyOnce(dir: string, keyFile: string): VerifyReport {
  const walk = new Walk(keyFile);
  try {
    walk.key = readOr(keyFile, () => readKey(keyFile));
    const anchorFile = readOr(ANCHOR_FILE, () => readAnchorFile(dir));
    checkAnchor(dir, anchorFile, walk.key, keyFile);
    const anchor = anchorFile.kind === 'none' ? undefined : anchorFile.anchor;
    walk.start(anchor?.start_hash ?? GENESIS, anchor !== undefined);
    const recorded = anchorFile.kind === 'signed' ? anchorFile.anchor.days : {};
    // Files up to removed_through are retention's, left by a crash between anchor and removal
    // (only a signed anchor is trusted to say which: an unsigned one could hide any file).
    const removed = (anchorFile.kind === 'signed' && anchorFile.anchor.removed_through) || '';
    const files = listAuditFiles(dir).filter((name) => name > removed);
    walk.files = files.length;
    const lastRecorded = Object.keys(recorded).sort().at(-1);
    for (const day of [...new Set([...files.map(fileDay), ...Object.keys(recorded)])].sort()) {
      const record = recorded[day];
      const file = dayFile(day);
      if (!files.includes(file)) {
        throw broken(file, 0, `missing: ${ANCHOR_FILE} records ${record?.count} entries for this day`);
      }
      const pastAnchor = record === undefined && (lastRecorded === undefined || day > lastRecorded);
      walk.day(file, readFileSync(join(dir, file), 'utf8'), record, pastAnchor);
    }
    return walk.report();
  } catch (error) {
    if (error instanceof Broken) return walk.report(error.bad);
    throw error;
  }
}

function readOr<T>(file: string, read: () => T): T {
  try {
    return read();
  } catch (error) {
    throw broken(file, 0, (error as Error).message);
  }
}

/** The anchor's own checks: its HMAC, and that a signed trail (the key exists) has one. */
function checkAnchor(dir: string, anchorFile: AnchorFile, key: Buffer | undefined, keyFile: string): void {
  if (anchorFile.kind === 'signed') {
    if (!key) throw broken(ANCHOR_FILE, 1, `signed, but ${keyFile} is missing`);
    if (!anchorSigned(anchorFile, key))
      throw broken(ANCHOR_FILE, 1, 'its HMAC does not match: edited without the key');
  } else if (key && listAuditFiles(dir).length > 0) {
    // The key is made with the anchor, by the first signed entry: a key beside audit files but
    // no signed anchor means the anchor (and perhaps the signed entries after older ones) went.
    const what = anchorFile.kind === 'none' ? 'missing' : 'unsigned';
    throw broken(ANCHOR_FILE, 0, `${what}, though the trail is signed (${keyFile} exists)`);
  }
}

/** The walk along the chain, file after file: what it has counted, and where it is. */
class Walk {
  key: Buffer | undefined;
  files = 0;
  private entries = 0;
  private unsigned = 0;
  private pastAnchor = 0;
  private startHash = GENESIS;
  private lastHash = GENESIS;
  private anchored = false;
  private signedSeen = false;
  private readonly torn: AuditPlace[] = [];

  constructor(private readonly keyFile: string) {}

  start(hash: string, anchored: boolean): void {
    this.startHash = this.lastHash = hash;
    this.anchored = anchored;
  }

  /**
   * One day's file; `record` is what the anchor says of it. `pastAnchor`: the anchor has no
   * record of this day or any later one (a writer's burst it had not written yet).
   */
  day(file: string, text: string, record: AnchorDay | undefined, pastAnchor: boolean): void {
    const lines = text.split('\n');
    if (lines.at(-1) === '') lines.pop();
    let count = 0;
    let tornSinceEntry: number | undefined; // the first torn line after the day's last entry
    for (const [index, line] of lines.entries()) {
      const checked = checkLine(line);
      if (!checked.ok) {
        // Unreadable JSON is what a writer killed mid-line leaves; the next entry must still
        // link to the one before it, so a removed or altered entry cannot hide as "torn".
        if (!checked.torn) throw broken(file, index + 1, checked.reason);
        this.torn.push({ file, line: index + 1 });
        tornSinceEntry ??= index + 1;
        continue;
      }
      tornSinceEntry = undefined;
      this.entry(file, index + 1, checked);
      count++;
      if (record && count === record.count && checked.hash !== record.last_hash) {
        throw broken(file, index + 1, `not the entry ${ANCHOR_FILE} records as this day's entry ${count}`);
      }
      if (checked.hmac !== undefined && (record ? count > record.count : pastAnchor)) this.pastAnchor++;
    }
    if (record && count < record.count) {
      throw broken(
        file,
        tornSinceEntry ?? lines.length + 1,
        `${ANCHOR_FILE} records ${record.count} entries for this day, the file holds ${count}: the last were removed or cut`,
      );
    }
  }

  private entry(file: string, line: number, checked: Extract<LineCheck, { ok: true }>): void {
    if (checked.hmac === undefined) {
      if (this.signedSeen)
        throw broken(file, line, 'no hmac after signed entries: rewritten without the key');
      this.unsigned++;
    } else {
      if (!this.key) throw broken(file, line, `signed, but ${this.keyFile} is missing`);
      if (!hmacMatches(this.key, checked.hash, checked.hmac)) {
        throw broken(file, line, 'hmac does not match: the entry was changed (its sha256 recomputed)');
      }
      this.signedSeen = true;
    }
    if (checked.prevHash !== this.lastHash) {
      const expected =
        this.entries === 0 && !this.anchored ? 'the genesis hash' : `the previous entry's hash`;
      throw broken(file, line, `prev_hash does not match ${expected} (${this.lastHash.slice(0, 12)}…)`);
    }
    this.lastHash = checked.hash;
    this.entries++;
  }

  report(bad?: Bad): VerifyReport {
    return {
      ok: bad === undefined,
      files: this.files,
      entries: this.entries,
      unsigned: this.unsigned,
      past_anchor: this.pastAnchor,
      start_hash: this.startHash,
      last_hash: this.lastHash,
      torn: this.torn,
      ...(bad && { bad }),
    };
  }
}
