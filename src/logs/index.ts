// Execution logs: JSONL files are the durable record (daily execution files, per-session files);
// an index derived from them serves search, retrieval and retention: SQLite FTS5 (index.db), or
// with CODEXEC_STORE=postgres://… shared PostgreSQL tables (tsvector/GIN) that every replica feeds.

export type { FullEntry } from './entry.js';
export { ExecutionNotFoundError } from './errors.js';
export {
  MAX_LIMIT,
  parseSince,
  type SearchFilters,
  type SearchPage,
  type SearchResult,
  STATUSES,
  searchFiltersSchema,
} from './filters.js';
export { networkConnectionSchema, toolCallCountSchema, toolCallSchema } from './lines.js';
export type { ExpiredExecution, RetentionDays, RetentionReport } from './retention.js';
export { ExecutionLogs, type ExecutionLogsOptions } from './sqlite/index.js';
export type { History } from './store.js';
export type { ExecutionLogEntry } from './types.js';
export { LogWriter, type LogWriterOptions } from './writer.js';
