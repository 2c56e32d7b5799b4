import type { Queryable } from '../../store/index.js';
import { hmacHex, hmacMatches } from '../key.js';

// The audit trail's tables in the shared database: every replica appends to a chain of its own
// (chain_id: its replica id), so replicas never contend for a chain's head. An entry row keeps
// the JSON the file trail writes (its fields ending with prev_hash: what `hash` covers), with the
// hash and HMAC beside it; `at`, `principal` and `prev_hash` are copied out for retention, the
// dashboard and SQL readers, and verify checks them against the JSON.

export const MIGRATIONS = [
  `CREATE TABLE codexec_audit_chains (
     chain_id TEXT PRIMARY KEY,
     -- Where the chain starts: seq 1 and the genesis hash, or after what retention removed.
     start_seq BIGINT NOT NULL,
     start_hash TEXT NOT NULL,
     start_hmac TEXT NOT NULL,
     -- The chain's head: its last entry, moved by each append in the append's own statement.
     last_seq BIGINT NOT NULL,
     last_hash TEXT NOT NULL,
     head_hmac TEXT NOT NULL,
     created_at TIMESTAMPTZ NOT NULL DEFAULT now()
   );
   CREATE TABLE codexec_audit_entries (
     chain_id TEXT NOT NULL,
     seq BIGINT NOT NULL,
     at TIMESTAMPTZ NOT NULL,
     principal TEXT,
     prev_hash TEXT NOT NULL,
     hash TEXT NOT NULL,
     hmac TEXT NOT NULL,
     entry TEXT NOT NULL,
     PRIMARY KEY (chain_id, seq)
   );
   CREATE INDEX codexec_audit_entries_at ON codexec_audit_entries (at);
   CREATE INDEX codexec_audit_entries_principal_at ON codexec_audit_entries (principal, at);`,
];

export const COMPONENT = 'audit';

/** An entry row as read back (BIGINT comes as a string). */
export type EntryRow = {
  readonly seq: string;
  readonly at: Date;
  readonly principal: string | null;
  readonly prev_hash: string;
  readonly hash: string;
  readonly hmac: string;
  readonly entry: string;
};

export type ChainRow = {
  readonly chain_id: string;
  readonly start_seq: string;
  readonly start_hash: string;
  readonly start_hmac: string;
  readonly last_seq: string;
  readonly last_hash: string;
  readonly head_hmac: string;
};

export const ENTRY_COLUMNS = 'seq, at, principal, prev_hash, hash, hmac, entry';
export const CHAIN_COLUMNS = 'chain_id, start_seq, start_hash, start_hmac, last_seq, last_hash, head_hmac';

// The chain's start and head are signed with the chain's id, so a chain's row cannot be moved to
// another chain, nor its seq or hash changed, without the key.
const startText = (chain: string, seq: number, hash: string) =>
  `codexec audit chain start\0${chain}\0${seq}\0${hash}`;
const headText = (chain: string, seq: number, hash: string) =>
  `codexec audit chain head\0${chain}\0${seq}\0${hash}`;

export const startMac = (key: Buffer, chain: string, seq: number, hash: string) =>
  hmacHex(key, startText(chain, seq, hash));
export const headMac = (key: Buffer, chain: string, seq: number, hash: string) =>
  hmacHex(key, headText(chain, seq, hash));

export const startSigned = (key: Buffer, row: ChainRow) =>
  hmacMatches(key, startText(row.chain_id, Number(row.start_seq), row.start_hash), row.start_hmac);
export const headSigned = (key: Buffer, row: ChainRow) =>
  hmacMatches(key, headText(row.chain_id, Number(row.last_seq), row.last_hash), row.head_hmac);

/** Rows of a chain in seq order, a page at a time (a chain may hold a year of entries). */
export async function* chainRows(
  db: Queryable,
  chainId: string,
  throughSeq?: number,
): AsyncGenerator<EntryRow> {
  const PAGE = 1000;
  let after = '-9223372036854775808';
  for (;;) {
    const rows = await db.query<EntryRow>(
      `SELECT ${ENTRY_COLUMNS} FROM codexec_audit_entries
       WHERE chain_id = $1 AND seq > $2::bigint AND ($3::bigint IS NULL OR seq <= $3::bigint)
       ORDER BY seq LIMIT ${PAGE}`,
      [chainId, after, throughSeq ?? null],
    );
    yield* rows;
    const last = rows.at(-1);
    if (rows.length < PAGE || last === undefined) return;
    after = last.seq;
  }
}
