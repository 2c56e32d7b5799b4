import { randomUUID } from 'node:crypto';
import { DEAD_AFTER_MS, migrateReplicas, NOW_MS, type Postgres, replicaId } from '../store/index.js';
import {
  answering,
  changedInput,
  endColumns,
  type InputMap,
  RESTARTED,
  RESTARTED_ERROR,
  rowSchema,
  type TaskEnd,
  type TaskRecord,
  type TaskStore,
  toRecord,
} from './store.js';

/** Never edit one that shipped: append. */
const MIGRATIONS = [
  `CREATE TABLE codexec_tasks (
     task_id TEXT PRIMARY KEY,
     principal TEXT NOT NULL,
     tool TEXT NOT NULL,
     status TEXT NOT NULL,
     status_message TEXT,
     output TEXT NOT NULL DEFAULT '',
     result TEXT,
     error TEXT,
     created_ms BIGINT NOT NULL,
     updated_ms BIGINT NOT NULL,
     ttl_ms BIGINT NOT NULL,
     expires_ms BIGINT NOT NULL,
     owner TEXT NOT NULL,
     input_requests TEXT,
     input_responses TEXT
   );
   CREATE INDEX codexec_tasks_principal ON codexec_tasks (principal, created_ms);
   CREATE INDEX codexec_tasks_expires ON codexec_tasks (expires_ms);
   CREATE INDEX codexec_tasks_unfinished ON codexec_tasks (owner) WHERE status IN ('working', 'input_required');`,
];

const UNFINISHED = "status IN ('working', 'input_required')";
/** Not yet expired ($3: now); a task still running outlives its TTL until it ends. */
const LIVE = `(expires_ms > $3 OR ${UNFINISHED})`;
/**
 * Whether the task's owner runs: this replica ($1), or one alive in the registry ($2: how long
 * silence means dead). A missing row is a dead owner.
 */
const OWNER_ALIVE = `(owner = $1 OR EXISTS (SELECT 1 FROM codexec_replicas r
  WHERE r.replica_id = owner AND r.heartbeat_ms > ${NOW_MS} - $2)) AS owner_alive`;

type Row = Record<string, unknown> & { owner: string; owner_alive: boolean; status: string };

/**
 * The task records in the shared database (CODEXEC_STORE=postgres://…), table codexec_tasks: any
 * replica reads, answers and cancels any task of the principal asking; the replica running a task
 * (its `owner`) takes the answers and stops the work of a task ended elsewhere (`ended`). A task
 * whose owner is no longer alive in codexec_replicas is failed RESTARTED by whoever reads it.
 */
export class PgTaskStore implements TaskStore {
  readonly shared = true;

  constructor(
    private readonly pg: Postgres,
    /** This replica (tests make two in one process). */
    private readonly self: string = replicaId(),
  ) {}

  private async ready(): Promise<void> {
    await migrateReplicas(this.pg);
    await this.pg.migrate('tasks', MIGRATIONS);
  }

  async create(principal: string, tool: string, ttlMs: number): Promise<TaskRecord> {
    await this.ready();
    const now = Date.now();
    // Finished tasks past their TTL go (a running one is kept until it ends).
    await this.pg.query(`DELETE FROM codexec_tasks WHERE expires_ms <= $1 AND NOT ${UNFINISHED}`, [now]);
    const [row] = await this.pg.query(
      `INSERT INTO codexec_tasks (task_id, principal, tool, status, created_ms, updated_ms, ttl_ms, expires_ms, owner)
       VALUES ($1, $2, $3, 'working', $4, $4, $5, $6, $7) RETURNING *`,
      [randomUUID(), principal, tool, now, ttlMs, now + ttlMs, this.self],
    );
    return toRecord(rowSchema.parse(row));
  }

  async get(taskId: string, principal: string): Promise<TaskRecord | undefined> {
    await this.ready();
    const rows = await this.pg.query<Row>(
      `SELECT *, ${OWNER_ALIVE} FROM codexec_tasks WHERE task_id = $4 AND principal = $5 AND ${LIVE}`,
      [this.self, DEAD_AFTER_MS, Date.now(), taskId, principal],
    );
    const [row] = await this.failOrphans(rows);
    return row && toRecord(rowSchema.parse(row));
  }

  async list(principal: string, limit = 100): Promise<TaskRecord[]> {
    await this.ready();
    const rows = await this.pg.query<Row>(
      `SELECT *, ${OWNER_ALIVE} FROM codexec_tasks WHERE principal = $4 AND ${LIVE}
       ORDER BY created_ms DESC LIMIT $5`,
      [this.self, DEAD_AFTER_MS, Date.now(), principal, limit],
    );
    return (await this.failOrphans(rows)).map((row) => toRecord(rowSchema.parse(row)));
  }

  /** Unfinished tasks of dead owners fail (in the table, once) and read failed, keeping their output. */
  private async failOrphans(rows: Row[]): Promise<Row[]> {
    return await Promise.all(
      rows.map(async (row) => {
        if (row.owner_alive || (row.status !== 'working' && row.status !== 'input_required')) return row;
        const [failed] = await this.pg.query<Row>(
          `UPDATE codexec_tasks SET status = 'failed', status_message = $1, error = $2, updated_ms = $3,
             input_requests = NULL, input_responses = NULL
           WHERE task_id = $4 AND owner = $5 AND ${UNFINISHED} RETURNING *`,
          [RESTARTED, RESTARTED_ERROR, Date.now(), row.task_id, row.owner],
        );
        if (failed) return failed;
        // Changed meanwhile (finished, or failed by another reader): read it as it is now.
        const [now] = await this.pg.query<Row>('SELECT * FROM codexec_tasks WHERE task_id = $1', [
          row.task_id,
        ]);
        return now ?? row;
      }),
    );
  }

  async setOutput(taskId: string, output: string, statusMessage: string | null): Promise<void> {
    await this.pg.query(
      `UPDATE codexec_tasks SET output = $1, status_message = $2, updated_ms = $3
       WHERE task_id = $4 AND ${UNFINISHED}`,
      [output, statusMessage, Date.now(), taskId],
    );
  }

  async finish(taskId: string, end: TaskEnd): Promise<boolean> {
    await this.ready();
    const { message, result, error, output } = endColumns(end);
    const changed = await this.pg.query(
      `UPDATE codexec_tasks SET status = $1, status_message = $2, result = $3, error = $4,
         output = COALESCE($5, output), updated_ms = $6, input_requests = NULL, input_responses = NULL
       WHERE task_id = $7 AND ${UNFINISHED} RETURNING task_id`,
      [end.status, message, result, error, output, Date.now(), taskId],
    );
    return changed.length > 0;
  }

  requestInput(taskId: string, key: string, request: unknown): Promise<boolean> {
    return this.changeInput(taskId, (requests) => {
      requests[key] ??= request;
    });
  }

  async withdrawInput(taskId: string, key: string): Promise<void> {
    await this.changeInput(taskId, (requests, responses) => {
      delete requests[key];
      delete responses[key];
    });
  }

  async answer(taskId: string, principal: string, answers: InputMap): Promise<boolean> {
    if (!(await this.get(taskId, principal))) return false;
    await this.changeInput(taskId, answering(answers));
    return true;
  }

  async takeResponses(taskId: string): Promise<InputMap> {
    let taken: InputMap = {};
    await this.changeInput(taskId, (_requests, responses) => {
      taken = { ...responses };
      for (const key of Object.keys(responses)) delete responses[key];
    });
    return taken;
  }

  async ended(taskIds: readonly string[]): Promise<string[]> {
    if (taskIds.length === 0) return [];
    const rows = await this.pg.query<{ id: string }>(
      `SELECT id FROM unnest($1::text[]) AS id
       WHERE NOT EXISTS (SELECT 1 FROM codexec_tasks WHERE task_id = id AND ${UNFINISHED})`,
      [taskIds],
    );
    return rows.map((row) => row.id);
  }

  /** Change an unfinished task's requests and answers under its row's lock; its status follows. */
  private async changeInput(
    taskId: string,
    change: (requests: InputMap, responses: InputMap) => void,
  ): Promise<boolean> {
    await this.ready();
    return await this.pg.transaction(async (tx) => {
      const [row] = await tx.query<{ input_requests: string | null; input_responses: string | null }>(
        `SELECT input_requests, input_responses FROM codexec_tasks WHERE task_id = $1 AND ${UNFINISHED}
         FOR UPDATE`,
        [taskId],
      );
      if (!row) return false;
      const next = changedInput(row, change);
      await tx.query(
        `UPDATE codexec_tasks SET status = $1, input_requests = $2, input_responses = $3, updated_ms = $4
         WHERE task_id = $5`,
        [next.status, next.requests, next.responses, Date.now(), taskId],
      );
      return true;
    });
  }

  /** The pool is the server's (closed with its other records). */
  async close(): Promise<void> {}
}
