import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { log } from '../util/index.js';
import type { Postgres } from './postgres.js';

/** How often a replica says it is alive. */
export const HEARTBEAT_MS = 2000;
/** A replica not heard from for this long is dead: its sessions are lost, its tasks failed. */
export const DEAD_AFTER_MS = 5 * HEARTBEAT_MS;

/** The registry's table (components that join it migrate it too: the order of starts is free). */
const REPLICA_MIGRATIONS = [
  `CREATE TABLE codexec_replicas (
     replica_id TEXT PRIMARY KEY,
     url TEXT NOT NULL,
     started_ms BIGINT NOT NULL,
     heartbeat_ms BIGINT NOT NULL
   )`,
];

let processId: string | undefined;

/**
 * This process's replica id: host, pid and a random part (a pid is reused after a restart, and
 * the restarted process owns none of its predecessor's sessions).
 */
export function replicaId(): string {
  processId ??= `${hostname()
    .replace(/[^A-Za-z0-9.-]/g, '-')
    .slice(0, 40)}-${process.pid}-${randomBytes(3).toString('hex')}`;
  return processId;
}

export interface ReplicaRow {
  readonly replicaId: string;
  readonly url: string;
  readonly heartbeatMs: number;
}

/**
 * The replicas sharing one database: each registers with the URL others reach it at and
 * refreshes its heartbeat every HEARTBEAT_MS; one silent for DEAD_AFTER_MS is dead. The clock is
 * the database's (replicas' clocks may differ).
 */
export class ReplicaRegistry {
  private timer: NodeJS.Timeout | undefined;
  readonly id = replicaId();

  constructor(private readonly pg: Postgres) {}

  /** Register as `url` and start beating (an unreachable database is retried at each beat). */
  async start(url: string): Promise<void> {
    await migrateReplicas(this.pg);
    await this.pg.query(
      `INSERT INTO codexec_replicas (replica_id, url, started_ms, heartbeat_ms) VALUES ($1, $2, ${NOW_MS}, ${NOW_MS})
       ON CONFLICT (replica_id) DO UPDATE SET url = EXCLUDED.url, heartbeat_ms = EXCLUDED.heartbeat_ms`,
      [this.id, url],
    );
    this.timer = setInterval(() => {
      this.pg
        .query(`UPDATE codexec_replicas SET heartbeat_ms = ${NOW_MS} WHERE replica_id = $1`, [this.id])
        .catch((error: Error) => log('warn', `replica heartbeat: ${error.message}`));
    }, HEARTBEAT_MS).unref();
  }

  /** The replica `id` when it is alive; undefined when unknown or dead. */
  async alive(id: string): Promise<ReplicaRow | undefined> {
    const [row] = await this.pg.query<{ replica_id: string; url: string; heartbeat_ms: string }>(
      `SELECT replica_id, url, heartbeat_ms FROM codexec_replicas
       WHERE replica_id = $1 AND heartbeat_ms > ${NOW_MS} - $2`,
      [id, DEAD_AFTER_MS],
    );
    return row && { replicaId: row.replica_id, url: row.url, heartbeatMs: Number(row.heartbeat_ms) };
  }

  /** Every live replica, this one included. */
  async live(): Promise<ReplicaRow[]> {
    const rows = await this.pg.query<{ replica_id: string; url: string; heartbeat_ms: string }>(
      `SELECT replica_id, url, heartbeat_ms FROM codexec_replicas WHERE heartbeat_ms > ${NOW_MS} - $1 ORDER BY replica_id`,
      [DEAD_AFTER_MS],
    );
    return rows.map((row) => ({
      replicaId: row.replica_id,
      url: row.url,
      heartbeatMs: Number(row.heartbeat_ms),
    }));
  }

  /** Stop beating and leave the registry (a clean shutdown: others see this replica dead at once). */
  async stop(): Promise<void> {
    clearInterval(this.timer);
    this.timer = undefined;
    await this.pg
      .query('DELETE FROM codexec_replicas WHERE replica_id = $1', [this.id])
      .catch((error: Error) => log('warn', `replica deregistration: ${error.message}`));
  }
}

/**
 * The registry's table, for components whose queries ask whether a replica is alive (a task's
 * owner, a quota's holds) before any replica has registered.
 */
export function migrateReplicas(pg: Postgres): Promise<void> {
  return pg.migrate('replicas', REPLICA_MIGRATIONS);
}

/** The database's clock in ms (SQL). */
export const NOW_MS = '(extract(epoch from clock_timestamp()) * 1000)::bigint';
