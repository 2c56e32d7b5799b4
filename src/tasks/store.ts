import { randomUUID } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname } from 'node:path';
import type Database from 'better-sqlite3';
import { z } from 'zod';

export const TASK_STATUSES = ['working', 'input_required', 'completed', 'failed', 'cancelled'] as const;
export type TaskStatus = (typeof TASK_STATUSES)[number];

/** One task as recorded: what tasks/get reads, whichever server process wrote it. */
export interface TaskRecord {
  readonly taskId: string;
  readonly principal: string;
  readonly tool: string;
  readonly status: TaskStatus;
  readonly statusMessage: string | null;
  /** Output so far (stderr lines tagged), its tail when long. */
  readonly output: string;
  /** completed: the tool's CallToolResult; failed: the JSON-RPC error. */
  readonly result: Record<string, unknown> | null;
  readonly error: { code: number; message: string; data?: unknown } | null;
  /** input_required: the outstanding requests to the client, by key (MRTR's envelope). */
  readonly inputRequests: Record<string, unknown>;
  readonly createdMs: number;
  readonly updatedMs: number;
  readonly ttlMs: number;
}

const SCHEMA = `
CREATE TABLE IF NOT EXISTS tasks (
  task_id TEXT PRIMARY KEY,
  principal TEXT NOT NULL,
  tool TEXT NOT NULL,
  status TEXT NOT NULL,
  status_message TEXT,
  output TEXT NOT NULL DEFAULT '',
  result TEXT,
  error TEXT,
  created_ms INTEGER NOT NULL,
  updated_ms INTEGER NOT NULL,
  ttl_ms INTEGER NOT NULL,
  expires_ms INTEGER NOT NULL,
  owner_pid INTEGER NOT NULL,
  input_requests TEXT,
  input_responses TEXT
);
CREATE INDEX IF NOT EXISTS tasks_principal ON tasks (principal, created_ms);
CREATE INDEX IF NOT EXISTS tasks_expires ON tasks (expires_ms);
CREATE INDEX IF NOT EXISTS tasks_unfinished ON tasks (status) WHERE status IN ('working', 'input_required');
`;
const SCHEMA_VERSION = 2;
/** From each version to the next (a home made by an older codexec). */
const MIGRATIONS: Record<number, string> = {
  1: 'ALTER TABLE tasks ADD COLUMN input_requests TEXT; ALTER TABLE tasks ADD COLUMN input_responses TEXT;',
};

const rowSchema = z.object({
  task_id: z.string(),
  principal: z.string(),
  tool: z.string(),
  status: z.enum(TASK_STATUSES),
  status_message: z.string().nullable(),
  output: z.string(),
  result: z.string().nullable(),
  error: z.string().nullable(),
  created_ms: z.number(),
  updated_ms: z.number(),
  ttl_ms: z.number(),
  input_requests: z.string().nullable(),
});
const inputMap = z.record(z.string(), z.unknown());
type InputMap = z.output<typeof inputMap>;

export const RESTARTED = 'server restarted';

/** Not yet expired; a task still running outlives its TTL until it ends. */
const LIVE = "(expires_ms > ? OR status IN ('working', 'input_required'))";

/**
 * The task records: `$CODEXEC_HOME/tasks.db`, a file of its own because, unlike index.db (derived
 * from the JSONL logs, dropped and rebuilt at will), nothing else holds them. Several servers may
 * share the home: each task names the process running it, and a task is declared lost ("server
 * restarted") only once that process is gone.
 */
export class TaskStore {
  private db: Database.Database | undefined;

  constructor(
    private readonly path: string,
    private readonly isAlive: (pid: number) => boolean = processAlive,
  ) {}

  /** Opened on first use (start-up stays free of I/O); unfinished tasks of dead servers fail then. */
  private open(): Database.Database {
    if (this.db) return this.db;
    mkdirSync(dirname(this.path), { recursive: true });
    const Sqlite = createRequire(import.meta.url)('better-sqlite3') as typeof Database;
    const db = new Sqlite(this.path);
    try {
      db.pragma('busy_timeout = 10000');
      db.pragma('journal_mode = WAL');
      db.pragma('synchronous = NORMAL');
      db.exec(SCHEMA);
      let version = db.pragma('user_version', { simple: true }) as number;
      // A table this version made is current; one an older codexec made is migrated.
      if (version === 0) version = SCHEMA_VERSION;
      for (; version < SCHEMA_VERSION; version++) db.exec(MIGRATIONS[version] ?? '');
      db.pragma(`user_version = ${SCHEMA_VERSION}`);
    } catch (error) {
      db.close();
      throw error;
    }
    this.db = db;
    this.failOrphans();
    return db;
  }

  /** Every unfinished task whose server process is gone reads failed, keeping its output. */
  private failOrphans(): void {
    const db = this.db as Database.Database;
    const owners = db
      .prepare("SELECT DISTINCT owner_pid FROM tasks WHERE status IN ('working', 'input_required')")
      .pluck()
      .all() as number[];
    const fail = db.prepare(
      `UPDATE tasks SET status = 'failed', status_message = ?, error = ?, updated_ms = ?,
         input_requests = NULL, input_responses = NULL
       WHERE owner_pid = ? AND status IN ('working', 'input_required')`,
    );
    const error = JSON.stringify({ code: -32603, message: RESTARTED });
    for (const pid of owners) {
      // Our own pid is a recycled one: whatever ran under it before us is gone.
      if (pid !== process.pid && this.isAlive(pid)) continue;
      fail.run(RESTARTED, error, Date.now(), pid);
    }
  }

  /** Record a new working task (durably: a tasks/get for it resolves from now on). */
  create(principal: string, tool: string, ttlMs: number): TaskRecord {
    const db = this.open();
    const now = Date.now();
    this.purge(now);
    const taskId = randomUUID();
    db.prepare(
      `INSERT INTO tasks (task_id, principal, tool, status, created_ms, updated_ms, ttl_ms, expires_ms, owner_pid)
       VALUES (?, ?, ?, 'working', ?, ?, ?, ?, ?)`,
    ).run(taskId, principal, tool, now, now, ttlMs, now + ttlMs, process.pid);
    return this.get(taskId, principal) as TaskRecord;
  }

  /** The task, when it exists for this principal and has not expired; another's reads as absent. */
  get(taskId: string, principal: string): TaskRecord | undefined {
    const row = this.open()
      .prepare(`SELECT * FROM tasks WHERE task_id = ? AND principal = ? AND ${LIVE}`)
      .get(taskId, principal, Date.now());
    return row === undefined ? undefined : toRecord(rowSchema.parse(row));
  }

  /** This principal's tasks, newest first. */
  list(principal: string, limit = 100): TaskRecord[] {
    return this.open()
      .prepare(`SELECT * FROM tasks WHERE principal = ? AND ${LIVE} ORDER BY created_ms DESC LIMIT ?`)
      .all(principal, Date.now(), limit)
      .map((row) => toRecord(rowSchema.parse(row)));
  }

  /** Replace the output so far (only while unfinished). */
  setOutput(taskId: string, output: string, statusMessage: string | null): void {
    this.open()
      .prepare(
        `UPDATE tasks SET output = ?, status_message = ?, updated_ms = ?
         WHERE task_id = ? AND status IN ('working', 'input_required')`,
      )
      .run(output, statusMessage, Date.now(), taskId);
  }

  /**
   * Move an unfinished task to a terminal status; false when it had already ended (a cancelled
   * task stays cancelled when its run reports afterwards).
   */
  finish(
    taskId: string,
    end:
      | { status: 'completed'; result: Record<string, unknown>; output: string }
      | { status: 'failed'; error: { code: number; message: string }; output: string }
      | { status: 'cancelled'; output?: string },
  ): boolean {
    const db = this.open();
    const result = end.status === 'completed' ? JSON.stringify(end.result) : null;
    const error = end.status === 'failed' ? JSON.stringify(end.error) : null;
    const message =
      end.status === 'failed' ? end.error.message : end.status === 'cancelled' ? 'cancelled' : null;
    const changed = db
      .prepare(
        `UPDATE tasks SET status = ?, status_message = ?, result = ?, error = ?,
           output = COALESCE(?, output), updated_ms = ?, input_requests = NULL, input_responses = NULL
         WHERE task_id = ? AND status IN ('working', 'input_required')`,
      )
      .run(end.status, message, result, error, end.output ?? null, Date.now(), taskId);
    return changed.changes > 0;
  }

  /**
   * Outstanding request `key` (kept once, whoever asks it again): the task reads input_required
   * until every one is answered or withdrawn. False when the task has ended.
   */
  requestInput(taskId: string, key: string, request: unknown): boolean {
    return this.changeInput(taskId, (requests) => {
      requests[key] ??= request;
    });
  }

  /** Withdraw request `key` (timed out, or its asker gave up) and any answer to it not yet taken. */
  withdrawInput(taskId: string, key: string): void {
    this.changeInput(taskId, (requests, responses) => {
      delete requests[key];
      delete responses[key];
    });
  }

  /**
   * tasks/update: keep the answers to outstanding requests for the run to take (takeResponses);
   * answers to any other key are ignored. False when there is no such task for this principal.
   */
  answer(taskId: string, principal: string, answers: InputMap): boolean {
    if (!this.get(taskId, principal)) return false;
    this.changeInput(taskId, (requests, responses) => {
      for (const [key, value] of Object.entries(answers)) {
        if (!Object.hasOwn(requests, key)) continue;
        delete requests[key];
        responses[key] = value;
      }
    });
    return true;
  }

  /** The answers kept for the run, removed as they are handed over. */
  takeResponses(taskId: string): InputMap {
    let taken: InputMap = {};
    this.changeInput(taskId, (_requests, responses) => {
      taken = { ...responses };
      for (const key of Object.keys(responses)) delete responses[key];
    });
    return taken;
  }

  /** Change an unfinished task's requests and answers in one transaction; its status follows. */
  private changeInput(taskId: string, change: (requests: InputMap, responses: InputMap) => void): boolean {
    const db = this.open();
    return db
      .transaction(() => {
        const row = db
          .prepare(
            `SELECT input_requests, input_responses FROM tasks
           WHERE task_id = ? AND status IN ('working', 'input_required')`,
          )
          .get(taskId) as { input_requests: string | null; input_responses: string | null } | undefined;
        if (!row) return false;
        const requests = parseMap(row.input_requests);
        const responses = parseMap(row.input_responses);
        change(requests, responses);
        const waiting = Object.keys(requests).length > 0;
        db.prepare(
          `UPDATE tasks SET status = ?, input_requests = ?, input_responses = ?, updated_ms = ?
         WHERE task_id = ?`,
        ).run(
          waiting ? 'input_required' : 'working',
          waiting ? JSON.stringify(requests) : null,
          Object.keys(responses).length > 0 ? JSON.stringify(responses) : null,
          Date.now(),
          taskId,
        );
        return true;
      })
      .immediate();
  }

  /** Remove finished tasks past their TTL (a running one is kept until it ends). */
  private purge(now: number): void {
    this.db
      ?.prepare("DELETE FROM tasks WHERE expires_ms <= ? AND status NOT IN ('working', 'input_required')")
      .run(now);
  }

  close(): void {
    this.db?.close();
    this.db = undefined;
  }
}

function toRecord(row: z.output<typeof rowSchema>): TaskRecord {
  return {
    taskId: row.task_id,
    principal: row.principal,
    tool: row.tool,
    status: row.status,
    statusMessage: row.status_message,
    output: row.output,
    result: row.result === null ? null : (JSON.parse(row.result) as Record<string, unknown>),
    error: row.error === null ? null : (JSON.parse(row.error) as TaskRecord['error']),
    inputRequests: parseMap(row.input_requests),
    createdMs: row.created_ms,
    updatedMs: row.updated_ms,
    ttlMs: row.ttl_ms,
  };
}

function parseMap(text: string | null): InputMap {
  return text === null ? {} : inputMap.parse(JSON.parse(text));
}

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}
