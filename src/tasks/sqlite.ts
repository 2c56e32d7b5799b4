import { randomUUID } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname } from 'node:path';
import type Database from 'better-sqlite3';
import { privateDatabase } from '../util/index.js';
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

/** Not yet expired; a task still running outlives its TTL until it ends. */
const LIVE = "(expires_ms > ? OR status IN ('working', 'input_required'))";

/**
 * The task records: `$CODEXEC_HOME/tasks.db`, a file of its own because, unlike index.db (derived
 * from the JSONL logs, dropped and rebuilt at will), nothing else holds them. Several servers may
 * share the home: each task names the process running it, and a task is declared lost ("server
 * restarted") only once that process is gone. Synchronous underneath: each method does its work
 * when called, and returns a settled promise.
 */
export class SqliteTaskStore implements TaskStore {
  readonly shared = false;
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
    privateDatabase(this.path);
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
    for (const pid of owners) {
      // Our own pid is a recycled one: whatever ran under it before us is gone.
      if (pid !== process.pid && this.isAlive(pid)) continue;
      fail.run(RESTARTED, RESTARTED_ERROR, Date.now(), pid);
    }
  }

  async create(principal: string, tool: string, ttlMs: number): Promise<TaskRecord> {
    const db = this.open();
    const now = Date.now();
    this.purge(now);
    const taskId = randomUUID();
    db.prepare(
      `INSERT INTO tasks (task_id, principal, tool, status, created_ms, updated_ms, ttl_ms, expires_ms, owner_pid)
       VALUES (?, ?, ?, 'working', ?, ?, ?, ?, ?)`,
    ).run(taskId, principal, tool, now, now, ttlMs, now + ttlMs, process.pid);
    return this.read(taskId, principal) as TaskRecord;
  }

  async get(taskId: string, principal: string): Promise<TaskRecord | undefined> {
    return this.read(taskId, principal);
  }

  private read(taskId: string, principal: string): TaskRecord | undefined {
    const row = this.open()
      .prepare(`SELECT * FROM tasks WHERE task_id = ? AND principal = ? AND ${LIVE}`)
      .get(taskId, principal, Date.now());
    return row === undefined ? undefined : toRecord(rowSchema.parse(row));
  }

  async list(principal: string, limit = 100): Promise<TaskRecord[]> {
    return this.open()
      .prepare(`SELECT * FROM tasks WHERE principal = ? AND ${LIVE} ORDER BY created_ms DESC LIMIT ?`)
      .all(principal, Date.now(), limit)
      .map((row) => toRecord(rowSchema.parse(row)));
  }

  async setOutput(taskId: string, output: string, statusMessage: string | null): Promise<void> {
    this.open()
      .prepare(
        `UPDATE tasks SET output = ?, status_message = ?, updated_ms = ?
         WHERE task_id = ? AND status IN ('working', 'input_required')`,
      )
      .run(output, statusMessage, Date.now(), taskId);
  }

  async finish(taskId: string, end: TaskEnd): Promise<boolean> {
    const { message, result, error, output } = endColumns(end);
    const changed = this.open()
      .prepare(
        `UPDATE tasks SET status = ?, status_message = ?, result = ?, error = ?,
           output = COALESCE(?, output), updated_ms = ?, input_requests = NULL, input_responses = NULL
         WHERE task_id = ? AND status IN ('working', 'input_required')`,
      )
      .run(end.status, message, result, error, output, Date.now(), taskId);
    return changed.changes > 0;
  }

  async requestInput(taskId: string, key: string, request: unknown): Promise<boolean> {
    return this.changeInput(taskId, (requests) => {
      requests[key] ??= request;
    });
  }

  async withdrawInput(taskId: string, key: string): Promise<void> {
    this.changeInput(taskId, (requests, responses) => {
      delete requests[key];
      delete responses[key];
    });
  }

  async answer(taskId: string, principal: string, answers: InputMap): Promise<boolean> {
    if (!this.read(taskId, principal)) return false;
    this.changeInput(taskId, answering(answers));
    return true;
  }

  async takeResponses(taskId: string): Promise<InputMap> {
    let taken: InputMap = {};
    this.changeInput(taskId, (_requests, responses) => {
      taken = { ...responses };
      for (const key of Object.keys(responses)) delete responses[key];
    });
    return taken;
  }

  /** Not asked: the SQLite store is not shared (a cancel from another server ends the record only). */
  async ended(): Promise<string[]> {
    return [];
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
        const next = changedInput(row, change);
        db.prepare(
          `UPDATE tasks SET status = ?, input_requests = ?, input_responses = ?, updated_ms = ?
         WHERE task_id = ?`,
        ).run(next.status, next.requests, next.responses, Date.now(), taskId);
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

  async close(): Promise<void> {
    this.db?.close();
    this.db = undefined;
  }
}

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}
