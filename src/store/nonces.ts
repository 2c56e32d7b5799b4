import { log } from '../util/index.js';
import type { Postgres } from './postgres.js';
import { NOW_MS } from './replicas.js';

const MIGRATIONS = [
  `CREATE TABLE codexec_replica_nonces (
     nonce TEXT PRIMARY KEY,
     expires_ms BIGINT NOT NULL
   )`,
  'CREATE INDEX codexec_replica_nonces_by_expiry ON codexec_replica_nonces (expires_ms)',
];

/** How often a replica deletes the nonces past their expiry (each one does; the delete is idempotent). */
const PRUNE_EVERY_MS = 60_000;

/**
 * The nonces of requests between replicas, used once across all of them (table
 * codexec_replica_nonces): a signature replayed to another replica, or to one that restarted and
 * forgot, finds its nonce here. A row is kept until its expiry (the database's clock), after which
 * its signature's time is outside every replica's window.
 */
export class NonceLedger {
  private prunedAt = 0;

  constructor(private readonly pg: Postgres) {}

  /** True when `nonce` was not claimed before (by any replica); it stays claimed until `untilMs`. */
  async claim(nonce: string, untilMs: number): Promise<boolean> {
    await this.pg.migrate('replica-nonces', MIGRATIONS);
    this.pruneNow();
    const rows = await this.pg.query(
      `INSERT INTO codexec_replica_nonces (nonce, expires_ms) VALUES ($1, $2)
       ON CONFLICT (nonce) DO NOTHING RETURNING nonce`,
      [nonce, untilMs],
    );
    return rows.length === 1;
  }

  /** Forget expired nonces, at most once per PRUNE_EVERY_MS; a failure is retried next time. */
  private pruneNow(): void {
    if (Date.now() - this.prunedAt < PRUNE_EVERY_MS) return;
    this.prunedAt = Date.now();
    this.pg.query(`DELETE FROM codexec_replica_nonces WHERE expires_ms < ${NOW_MS}`).catch((error: Error) => {
      this.prunedAt = 0;
      log('warn', `replica nonces: ${error.message}`);
    });
  }
}
