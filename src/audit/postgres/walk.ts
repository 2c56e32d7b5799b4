import { checkLine } from '../chain.js';
import { hmacMatches } from '../key.js';
import type { EntryRow } from './schema.js';

/** Where a chain breaks: the seq (0: the chain's own row) and why. */
export interface Break {
  readonly seq: number;
  readonly reason: string;
}

/**
 * The walk along one chain from its start, row after row in seq order: each seq the next one,
 * each entry's JSON the audit entry's with its hash right, its HMAC under the key, its link to
 * the entry before, and the columns copied out of it equal to it. Verify and retention (before
 * it removes anything) walk the same way.
 */
export class ChainWalk {
  /** The seq of the last entry walked (start_seq - 1 before the first). */
  lastSeq: number;
  lastHash: string;
  entries = 0;

  constructor(
    private readonly key: Buffer,
    private readonly startSeq: number,
    startHash: string,
  ) {
    this.lastSeq = startSeq - 1;
    this.lastHash = startHash;
  }

  /** Check the next row; a Break when it breaks the chain (the walk then stops). */
  next(row: EntryRow): Break | undefined {
    const seq = Number(row.seq);
    const expected = this.lastSeq + 1;
    if (seq < this.startSeq)
      return { seq, reason: `before the chain's start (seq ${this.startSeq}, where retention left it)` };
    if (seq > expected) {
      const after =
        this.entries === 0 ? `the chain starts at seq ${this.startSeq}` : `seq ${this.lastSeq} is there`;
      return { seq: expected, reason: `missing (${after}, the next row is seq ${seq}): the row was deleted` };
    }
    const reason = this.check(row);
    if (reason) return { seq, reason };
    this.lastSeq = seq;
    this.lastHash = row.hash;
    this.entries++;
    return undefined;
  }

  private check(row: EntryRow): string | undefined {
    let entry: unknown;
    try {
      entry = JSON.parse(row.entry);
    } catch {
      return 'its entry is not valid JSON';
    }
    if (typeof entry !== 'object' || entry === null || Array.isArray(entry))
      return 'its entry is not a JSON object';
    const checked = checkLine(JSON.stringify({ ...entry, hash: row.hash, hmac: row.hmac }));
    if (!checked.ok) return checked.reason;
    if (!hmacMatches(this.key, row.hash, row.hmac))
      return 'hmac does not match: the entry was changed (its sha256 recomputed) or written without the key';
    if (checked.prevHash !== this.lastHash) {
      const what = this.entries === 0 ? "the chain's start hash" : "the previous entry's hash";
      return `prev_hash does not match ${what} (${this.lastHash.slice(0, 12)}…)`;
    }
    const fields = entry as { at?: unknown; principal?: unknown };
    if (row.prev_hash !== checked.prevHash) return 'its prev_hash column differs from the signed entry';
    if (typeof fields.at !== 'string' || Date.parse(fields.at) !== row.at.getTime())
      return 'its at column differs from the signed entry';
    if ((fields.principal ?? null) !== row.principal)
      return 'its principal column differs from the signed entry';
    return undefined;
  }
}
