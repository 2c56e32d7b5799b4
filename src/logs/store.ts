import type { FullEntry } from './entry.js';
import type { SearchFilters, SearchPage } from './filters.js';
import type { RetentionReport } from './retention.js';
import type { LogWriter } from './writer.js';

/**
 * Execution history as the server and CLI see it, whatever keeps the index: the JSONL writer
 * (every replica's local record) and search, retrieval and retention over what it wrote.
 * ExecutionLogs (SQLite, CODEXEC_STORE unset) and PgExecutionLogs (CODEXEC_STORE=postgres://…).
 */
export interface History {
  readonly writer: LogWriter;
  /**
   * Matching executions, newest first, with the count before `limit`: only `principal`'s when
   * given (tools: the caller's), everyone's when not (the operator's CLI).
   */
  search(filters: SearchFilters, principal?: string): Promise<SearchPage>;
  /** The full entry; ExecutionNotFoundError for an unknown id and for another principal's. */
  get(executionId: string, principal?: string): Promise<FullEntry>;
  /** Who ran `executionId` (undefined when no entry has it). */
  principalOf(executionId: string): Promise<string | undefined>;
  /** Apply retention now (also run by the timer once `startRetention` was called). */
  runRetention(now?: number): Promise<RetentionReport>;
  /** Run retention in the background (unref'd timers). */
  startRetention(): void;
  /** Finish pending appends and index updates, stop the timers. */
  close(): Promise<void>;
}
