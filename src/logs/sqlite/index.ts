// The execution log's index in SQLite (CODEXEC_STORE=sqlite): index.db, an FTS5 index derived
// from this server's JSONL files, which it catches up with, searches and rebuilds when damaged.
export { ExecutionLogs, type ExecutionLogsOptions } from './history.js';
