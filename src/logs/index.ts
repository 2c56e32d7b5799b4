// Execution logs: JSONL files are the durable record (daily execution files, per-session files);
// a SQLite FTS5 index derived from them (index.db) serves search, retrieval and retention.

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
export { ExecutionLogs, type ExecutionLogsOptions } from './history.js';
export { networkConnectionSchema } from './lines.js';
export type { ExpiredExecution, RetentionDays, RetentionReport } from './retention.js';
export type { ExecutionLogEntry } from './types.js';
export { LogWriter, type LogWriterOptions } from './writer.js';
