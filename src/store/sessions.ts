import type { Postgres } from './postgres.js';
import { DEAD_AFTER_MS, NOW_MS } from './replicas.js';

const MIGRATIONS = [
  `CREATE TABLE codexec_sessions (
     session_id TEXT PRIMARY KEY,
     replica_id TEXT NOT NULL,
     principal TEXT NOT NULL,
     language TEXT NOT NULL,
     started_ms BIGINT NOT NULL,
     lost_ms BIGINT
   )`,
  'CREATE INDEX codexec_sessions_by_principal ON codexec_sessions (principal, replica_id)',
];

/** How long the row of a lost session keeps answering SESSION_LOST before it is pruned. */
export const LOST_KEPT_MS = 24 * 60 * 60 * 1000;
/** A row this young is never pruned for its replica's absence: that replica may be registering. */
const REGISTERING_MS = 60_000;

export interface SessionRow {
  readonly sessionId: string;
  readonly replicaId: string;
  readonly principal: string;
  readonly language: string;
  /** A replica found its owner gone: the session answers SESSION_LOST from every replica. */
  readonly lost: boolean;
}

interface Row {
  session_id: string;
  replica_id: string;
  principal: string;
  language: string;
  lost_ms: string | null;
}

/**
 * Which replica runs each live session, and for whom (table codexec_sessions): a row is written
 * when a session starts and deleted when it ends; the rows of a replica that stopped are marked
 * lost, those of one that died when another replica notices; lost rows (answering SESSION_LOST)
 * are pruned after LOST_KEPT_MS.
 */
export class SessionTable {
  constructor(private readonly pg: Postgres) {}

  async add(record: Omit<SessionRow, 'lost'>): Promise<void> {
    await this.pg.migrate('sessions', MIGRATIONS);
    await this.pg.query(
      `INSERT INTO codexec_sessions (session_id, replica_id, principal, language, started_ms)
       VALUES ($1, $2, $3, $4, ${NOW_MS})`,
      [record.sessionId, record.replicaId, record.principal, record.language],
    );
  }

  /** The session ended on `replicaId` (only that replica's row goes). */
  async remove(sessionId: string, replicaId: string): Promise<void> {
    await this.pg.migrate('sessions', MIGRATIONS);
    await this.pg.query('DELETE FROM codexec_sessions WHERE session_id = $1 AND replica_id = $2', [
      sessionId,
      replicaId,
    ]);
  }

  /** Every session of `replicaId` is lost (its clean stop: they are about to be killed with it). */
  async loseReplica(replicaId: string): Promise<void> {
    await this.pg.migrate('sessions', MIGRATIONS);
    await this.pg.query(
      `UPDATE codexec_sessions SET lost_ms = ${NOW_MS} WHERE replica_id = $1 AND lost_ms IS NULL`,
      [replicaId],
    );
  }

  async find(sessionId: string): Promise<SessionRow | undefined> {
    await this.pg.migrate('sessions', MIGRATIONS);
    const [row] = await this.pg.query<Row>(
      'SELECT session_id, replica_id, principal, language, lost_ms FROM codexec_sessions WHERE session_id = $1',
      [sessionId],
    );
    return (
      row && {
        sessionId: row.session_id,
        replicaId: row.replica_id,
        principal: row.principal,
        language: row.language,
        lost: row.lost_ms !== null,
      }
    );
  }

  async markLost(sessionId: string): Promise<void> {
    await this.pg.migrate('sessions', MIGRATIONS);
    await this.pg.query(
      `UPDATE codexec_sessions SET lost_ms = ${NOW_MS} WHERE session_id = $1 AND lost_ms IS NULL`,
      [sessionId],
    );
  }

  /** How many sessions of `principal` run on live replicas other than `except` (max_sessions). */
  async countElsewhere(principal: string, except: string): Promise<number> {
    await this.pg.migrate('sessions', MIGRATIONS);
    const [row] = await this.pg.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM codexec_sessions s JOIN codexec_replicas r ON r.replica_id = s.replica_id
       WHERE s.principal = $1 AND s.replica_id <> $2 AND s.lost_ms IS NULL AND r.heartbeat_ms > ${NOW_MS} - $3`,
      [principal, except, DEAD_AFTER_MS],
    );
    return row?.n ?? 0;
  }

  /** The replicas other than `except` running sessions of `principal` not known to be lost. */
  async replicasOf(principal: string, except: string): Promise<string[]> {
    await this.pg.migrate('sessions', MIGRATIONS);
    const rows = await this.pg.query<{ replica_id: string }>(
      `SELECT DISTINCT replica_id FROM codexec_sessions
       WHERE principal = $1 AND replica_id <> $2 AND lost_ms IS NULL ORDER BY replica_id`,
      [principal, except],
    );
    return rows.map((row) => row.replica_id);
  }

  /**
   * Forget lost sessions after LOST_KEPT_MS: rows marked lost that long ago, and rows of a
   * replica not heard from for that long (or gone from the registry). Needs codexec_replicas.
   */
  async prune(): Promise<void> {
    await this.pg.migrate('sessions', MIGRATIONS);
    await this.pg.query(
      `DELETE FROM codexec_sessions s
       WHERE s.lost_ms < ${NOW_MS} - $1
          OR (s.started_ms < ${NOW_MS} - $2 AND NOT EXISTS (
                SELECT 1 FROM codexec_replicas r
                WHERE r.replica_id = s.replica_id AND r.heartbeat_ms > ${NOW_MS} - $1))`,
      [LOST_KEPT_MS, REGISTERING_MS],
    );
  }
}
