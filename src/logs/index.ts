// Execution logs: JSONL files are the durable record (daily execution files, per-session files).

export type { ExecutionLogEntry } from './types.js';
export { LogWriter } from './writer.js';
