// The audit trail: one hash-chained, HMAC-signed entry per attempt to run code, refused ones too,
// in daily JSONL files beside the execution logs, or with a postgres store in one chain per
// replica in a shared table; `codexec audit verify` checks it.

export { MAX_INPUT_CHARS } from './chain.js';
export {
  type AuditPlace,
  AuditTrail,
  type AuditTrailOptions,
  auditFileName,
  KEY_FILE,
  listAuditFiles,
  type VerifyReport,
  verifyAudit,
} from './sqlite/index.js';
export type { AuditLog, AuditReport, AuditRow } from './store.js';
