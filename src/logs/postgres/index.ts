// The execution log's index in PostgreSQL (CODEXEC_STORE=postgres://…): tables every replica
// feeds with what it appends, searched with index.db's semantics (its tokenizer, in TypeScript).
export { PgExecutionLogs, type PgExecutionLogsOptions } from './history.js';
