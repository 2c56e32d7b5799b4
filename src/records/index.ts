// Where each kind of record is kept (execution logs, audit, tasks, scripts, quotas): this server's
// own files and SQLite, or the shared PostgreSQL of CODEXEC_STORE. The one place that chooses.
export { openRecords, type Records, type RecordsOptions } from './open.js';
