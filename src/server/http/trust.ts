import { DEAD_AFTER_MS, migrateReplicas, NOW_MS, type Postgres, replicaId } from '../../store/index.js';
import { log } from '../../util/index.js';

/** Never edit one that shipped: append. */
const MIGRATIONS = [
  `CREATE TABLE codexec_trust (
     principal TEXT NOT NULL,
     key TEXT NOT NULL,
     replica_id TEXT NOT NULL,
     created_ms BIGINT NOT NULL,
     PRIMARY KEY (principal, key, replica_id)
   )`,
];

/**
 * What each principal trusted (approve_trust_session), shared by the replicas of one database
 * (CODEXEC_STORE=postgres://…): read when a request of the principal starts, written when trust
 * is given. An entry lasts as long as the replica that recorded it (one server's trust lasts its
 * life): once that replica is gone from codexec_replicas, the entry no longer counts.
 */
export class SharedTrust {
  constructor(
    private readonly pg: Postgres,
    /** This replica (tests make two in one process). */
    private readonly self: string = replicaId(),
  ) {}

  /** The keys `principal` trusted, on any live replica. */
  async keys(principal: string): Promise<string[]> {
    await this.ready();
    const rows = await this.pg.query<{ key: string }>(
      `SELECT DISTINCT key FROM codexec_trust t WHERE principal = $1
         AND (replica_id = $2 OR EXISTS (SELECT 1 FROM codexec_replicas r
           WHERE r.replica_id = t.replica_id AND r.heartbeat_ms > ${NOW_MS} - $3))`,
      [principal, this.self, DEAD_AFTER_MS],
    );
    return rows.map((row) => row.key);
  }

  /** Record that `principal` trusts `key` (idempotent). */
  async add(principal: string, key: string): Promise<void> {
    await this.ready();
    await this.pg.query(
      `INSERT INTO codexec_trust (principal, key, replica_id, created_ms) VALUES ($1, $2, $3, $4)
       ON CONFLICT DO NOTHING`,
      [principal, key, this.self, Date.now()],
    );
  }

  /**
   * `principal`'s trust as the approval code uses it (a Set): `add` also writes the key here, in
   * the background (a failed write is logged; this replica still trusts it).
   */
  setFor(principal: string): Set<string> {
    return new WrittenSet((key) =>
      this.add(principal, key).catch((error: Error) =>
        log('warn', `trust of ${principal} not shared: ${error.message}`),
      ),
    );
  }

  /** Bring `trusted` (made by setFor) up to what the replicas recorded for `principal`. */
  async refresh(principal: string, trusted: Set<string>): Promise<void> {
    const keys = await this.keys(principal);
    if (trusted instanceof WrittenSet) trusted.learn(keys);
  }

  private async ready(): Promise<void> {
    await migrateReplicas(this.pg);
    await this.pg.migrate('trust', MIGRATIONS);
  }
}

/** A Set whose new members are written through `write`; `learn` adds members read back. */
class WrittenSet extends Set<string> {
  constructor(private readonly write: (key: string) => unknown) {
    super();
  }

  override add(key: string): this {
    if (!this.has(key)) void this.write(key);
    return super.add(key);
  }

  learn(keys: readonly string[]): void {
    for (const key of keys) super.add(key);
  }
}
