import type { AuditAttempt } from '../../policy/index.js';
import type { Postgres } from '../../store/index.js';
import { isoTime, log } from '../../util/index.js';
import { chainEntry, GENESIS } from '../chain.js';
import { type AuditLog, type AuditRow, viewOf } from '../store.js';
import type { ChainsReport } from './report.js';
import { pruneChains } from './retention.js';
import {
  CHAIN_COLUMNS,
  type ChainRow,
  COMPONENT,
  headMac,
  headSigned,
  MIGRATIONS,
  startMac,
} from './schema.js';
import { verifyChains } from './verify.js';

export interface PgAuditTrailOptions {
  readonly pg: Postgres;
  /** The audit key: derived from the approval key, which every replica and the CLI share. */
  readonly key: Buffer;
  /** This writer's chain: its replica id (one writer per chain). */
  readonly chainId: string;
  /** Entries older than this many days are removed from every chain (each stays verifiable). */
  readonly retentionDays: number;
  readonly now?: () => Date;
}

/**
 * The audit trail in PostgreSQL (CODEXEC_STORE=postgres://…): the same entries as the files',
 * one hash chain per replica in a shared table. Appends are serialized in this process, the only
 * writer of its chain; each is one statement that moves the chain's signed head and inserts the
 * entry (both or neither), made before the attempt's result is returned.
 */
export class PgAuditTrail implements AuditLog {
  private queue: Promise<void> = Promise.resolve();
  private tip: { readonly seq: number; readonly hash: string } | undefined;
  private prunedDay = '';
  private pruning: Promise<unknown> = Promise.resolve();

  constructor(private readonly options: PgAuditTrailOptions) {}

  record(attempt: AuditAttempt): Promise<void> {
    const run = this.queue.then(() => this.append(attempt));
    this.queue = run.catch((error: Error) => log('error', `audit: ${error.message}`));
    return run;
  }

  flush(): Promise<void> {
    return this.queue;
  }

  /** Flush and wait for retention (the pool itself is the store's to close). */
  async close(): Promise<void> {
    await this.queue;
    await this.pruning;
  }

  async verify(): Promise<ChainsReport> {
    return await verifyChains(this.options.pg, this.options.key);
  }

  async recent(principal: string | undefined, max: number): Promise<AuditRow[]> {
    const { pg } = this.options;
    await pg.migrate(COMPONENT, MIGRATIONS);
    const rows =
      principal === undefined
        ? await pg.query<{ entry: string }>(
            'SELECT entry FROM codexec_audit_entries ORDER BY at DESC, seq DESC LIMIT $1',
            [max],
          )
        : await pg.query<{ entry: string }>(
            'SELECT entry FROM codexec_audit_entries WHERE principal = $1 ORDER BY at DESC, seq DESC LIMIT $2',
            [principal, max],
          );
    return rows.map((row) => viewOf(JSON.parse(row.entry) as AuditRow));
  }

  /** Remove what is past retention from every chain now (else done on each new UTC day). */
  prune(): Promise<number> {
    const { pg, key, retentionDays } = this.options;
    const at = this.options.now?.() ?? new Date();
    const run = pg
      .migrate(COMPONENT, MIGRATIONS)
      .then(() => pruneChains(pg, key, retentionDays, at.getTime()));
    this.pruning = run.catch((error: Error) => log('warn', `audit retention: ${error.message}`));
    return run;
  }

  private async append(attempt: AuditAttempt): Promise<void> {
    const { pg, key, chainId } = this.options;
    await pg.migrate(COMPONENT, MIGRATIONS);
    const at = this.options.now?.() ?? new Date();
    const day = isoTime(at).slice(0, 10);
    if (this.prunedDay !== day) {
      // Off the append's path: the first entry of a day does not wait for a year of rows.
      this.prunedDay = day;
      void this.prune().catch(() => {});
    }
    const tip = this.tip ?? (await this.openChain());
    const seq = tip.seq + 1;
    const entry = chainEntry(attempt, tip.hash, at, key);
    this.tip = undefined; // until this append is known to have landed: re-read the head then
    const rows = await pg.query<{ seq: string }>(
      `WITH head AS (
         UPDATE codexec_audit_chains SET last_seq = $2::bigint, last_hash = $6, head_hmac = $9
         WHERE chain_id = $1 AND last_seq = $2::bigint - 1 AND last_hash = $5
         RETURNING chain_id)
       INSERT INTO codexec_audit_entries (chain_id, seq, at, principal, prev_hash, hash, hmac, entry)
       SELECT chain_id, $2::bigint, $3, $4, $5, $6, $7, $8 FROM head
       RETURNING seq`,
      [
        chainId,
        seq,
        at,
        attempt.principal,
        tip.hash,
        entry.hash,
        entry.hmac,
        entry.unhashed,
        headMac(key, chainId, seq, entry.hash),
      ],
    );
    if (rows.length !== 1)
      throw new Error(
        `chain ${chainId}'s head moved under this writer (another process writes it?); entry not written`,
      );
    this.tip = { seq, hash: entry.hash };
  }

  /** The chain's head: made (seq 0, the genesis hash) by the first append, else read and checked. */
  private async openChain(): Promise<{ seq: number; hash: string }> {
    const { pg, key, chainId } = this.options;
    await pg.query(
      `INSERT INTO codexec_audit_chains (chain_id, start_seq, start_hash, start_hmac, last_seq, last_hash, head_hmac)
       VALUES ($1, 1, $2, $3, 0, $2, $4) ON CONFLICT (chain_id) DO NOTHING`,
      [chainId, GENESIS, startMac(key, chainId, 1, GENESIS), headMac(key, chainId, 0, GENESIS)],
    );
    const [row] = await pg.query<ChainRow>(
      `SELECT ${CHAIN_COLUMNS} FROM codexec_audit_chains WHERE chain_id = $1`,
      [chainId],
    );
    if (!row) throw new Error(`chain ${chainId} has no row in codexec_audit_chains`);
    // Appending would sign over whatever was done to it: the evidence stays as verify will find it.
    if (!headSigned(key, row))
      throw new Error(`chain ${chainId}'s head fails its HMAC (edited without the key); not appending to it`);
    return { seq: Number(row.last_seq), hash: row.last_hash };
  }
}
