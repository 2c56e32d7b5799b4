import { mkdirSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname } from 'node:path';
import type Database from 'better-sqlite3';
import { log, privateDatabase } from '../../util/index.js';

export type Db = Database.Database;

// Bump when the schema changes: an index of another version is dropped and rebuilt from JSONL.
const SCHEMA_VERSION = 9;

const SCHEMA = `
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS files (
  id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, ino INTEGER NOT NULL, offset INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS sessions (session_id TEXT PRIMARY KEY, language TEXT NOT NULL);
-- id is time-ordered (executed_ms * 1024 + a tie-breaker), so "newest first" is id DESC, in the
-- table and in the FTS index alike; secondary indexes end in id implicitly. Language filters are
-- served by FTS facet tokens and the counts table; status keeps an index for "failures since".
CREATE TABLE IF NOT EXISTS executions (
  id INTEGER PRIMARY KEY,
  execution_id TEXT NOT NULL UNIQUE,
  session_id TEXT,
  language TEXT,
  status TEXT NOT NULL,
  exit_code INTEGER,
  duration_ms INTEGER NOT NULL,
  executed_at TEXT NOT NULL,
  executed_ms INTEGER NOT NULL,
  code_preview TEXT NOT NULL,
  error_preview TEXT,
  file INTEGER NOT NULL,
  offset INTEGER NOT NULL,
  length INTEGER NOT NULL,
  principal TEXT NOT NULL,
  script_name TEXT
);
CREATE INDEX IF NOT EXISTS executions_status ON executions (status);
CREATE INDEX IF NOT EXISTS executions_session ON executions (session_id);
CREATE INDEX IF NOT EXISTS executions_file ON executions (file);
CREATE INDEX IF NOT EXISTS executions_principal ON executions (principal);
CREATE INDEX IF NOT EXISTS executions_script ON executions (script_name) WHERE script_name IS NOT NULL;
-- Entries per (principal, language, status), kept by the indexer in the same transactions as the rows
-- (a trigger would triple the build time): language/status-only searches report total_count
-- without counting a million rows.
CREATE TABLE IF NOT EXISTS counts (
  principal TEXT NOT NULL, language TEXT NOT NULL, status TEXT NOT NULL, n INTEGER NOT NULL,
  PRIMARY KEY (principal, language, status)
) WITHOUT ROWID;
-- Words of code, stdout, stderr and the script's name, plus the filters as columns of their own, so
-- that a text search with filters is one FTS query (doclist merges), counted without the table.
CREATE VIRTUAL TABLE IF NOT EXISTS executions_fts
  USING fts5 (code, stdout, stderr, script, facet, session, owner, content = '', contentless_delete = 1);
`;

const DROP = `
DROP TABLE IF EXISTS executions_fts; DROP TABLE IF EXISTS executions; DROP TABLE IF EXISTS counts;
DROP TABLE IF EXISTS sessions;
DROP TABLE IF EXISTS files; DROP TABLE IF EXISTS meta;
`;

/** True for errors that mean the database file itself is damaged (rebuild it from JSONL). */
export function isCorruption(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && (code.startsWith('SQLITE_CORRUPT') || code === 'SQLITE_NOTADB');
}

/** Delete the index and its WAL files (it is derived: JSONL is the record). */
export function removeIndexFiles(path: string): void {
  for (const suffix of ['', '-wal', '-shm']) rmSync(`${path}${suffix}`, { force: true });
}

/**
 * Open (creating if needed) the index at `path` for the logs in `logDir`. A damaged file is
 * deleted and recreated empty; an index of another schema version or log dir is emptied. Either
 * way the caller's catch-up then refills it from JSONL. better-sqlite3 (a native module) is loaded
 * here, on first use, so server start-up never pays for it.
 */
export function openIndexDb(path: string, logDir: string): Db {
  try {
    return openOnce(path, logDir);
  } catch (error) {
    if (!isCorruption(error)) throw error;
    log(
      'warn',
      `search index ${path} is damaged (${(error as Error).message}); rebuilding it from the JSONL logs`,
    );
    removeIndexFiles(path);
    return openOnce(path, logDir);
  }
}

function openOnce(path: string, logDir: string): Db {
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 }); // a first start makes CODEXEC_HOME here
  const Sqlite = loadDriver();
  privateDatabase(path);
  const db = new Sqlite(path);
  try {
    // Several codexec processes may share CODEXEC_HOME: WAL lets readers run beside one writer,
    // and a writer waits for the lock instead of failing.
    db.pragma('busy_timeout = 10000');
    enableWal(db);
    db.pragma('synchronous = NORMAL');
    // better-sqlite3 builds SQLite with a 16 MB page cache per connection: a server's index
    // fills it slowly as the logs grow (~0.36 MB of native memory per 1,000 runs, found by
    // bisecting a 20,000-run load test), which looks like a leak for ~45,000 runs. SQLite's own
    // default (2 MB) is ample: the OS caches the file, and a search reads few pages.
    db.pragma(`cache_size = -${CACHE_KIB}`);
    prepareSchema(db, logDir);
    return db;
  } catch (error) {
    db.close();
    throw error;
  }
}

/** The index's page cache per connection, in KiB. */
const CACHE_KIB = 2000;

/** How long opening waits for another process that is switching the same new index to WAL. */
const WAL_WAIT_MS = 10_000;

/**
 * `journal_mode = WAL` needs the database to itself and fails at once with SQLITE_BUSY, without
 * the busy handler, while another process opens the same new index (two servers started
 * together: seen in ~1 of 3 simultaneous opens). Retried with short sleeps; opening is once per
 * process, so blocking for a few ms then is harmless.
 */
function enableWal(db: Db): void {
  const deadline = Date.now() + WAL_WAIT_MS;
  for (let delayMs = 1; ; delayMs = Math.min(delayMs * 2, 50)) {
    try {
      db.pragma('journal_mode = WAL');
      return;
    } catch (error) {
      if ((error as { code?: unknown }).code !== 'SQLITE_BUSY' || Date.now() > deadline) throw error;
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, delayMs);
    }
  }
}

function prepareSchema(db: Db, logDir: string): void {
  db.transaction(() => {
    const version = db.pragma('user_version', { simple: true }) as number;
    const hasMeta = db.prepare("SELECT 1 FROM sqlite_master WHERE name = 'meta'").get() !== undefined;
    const indexedDir = hasMeta
      ? (db.prepare("SELECT value FROM meta WHERE key = 'log_dir'").get() as { value: string } | undefined)
      : undefined;
    const stale = hasMeta && (version !== SCHEMA_VERSION || (indexedDir && indexedDir.value !== logDir));
    if (stale) {
      log('info', 'search index is from another version or log directory; rebuilding it');
      db.exec(DROP);
    }
    db.exec(SCHEMA);
    db.prepare("INSERT OR REPLACE INTO meta (key, value) VALUES ('log_dir', ?)").run(logDir);
    db.pragma(`user_version = ${SCHEMA_VERSION}`);
  }).immediate();
}

type Driver = typeof Database;
let driver: Driver | undefined;

function loadDriver(): Driver {
  driver ??= createRequire(import.meta.url)('better-sqlite3') as Driver;
  return driver;
}
