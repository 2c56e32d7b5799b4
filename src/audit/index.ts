// The audit trail (ADR 036): one hash-chained, HMAC-signed entry per attempt to run code,
// refused ones too, in daily JSONL files beside the execution logs, or with a postgres store in
// one chain per replica in a shared table; `codexec audit verify` checks it.

export { MAX_INPUT_CHARS } from './chain.js';
export { auditFileName, KEY_FILE, listAuditFiles } from './files.js';
export type { AuditLog, AuditReport, AuditRow } from './log.js';
export { type ChainReport, type ChainsReport, PgAuditTrail, verifyChains } from './postgres/index.js';
export { AuditTrail, type AuditTrailOptions } from './trail.js';
export { type AuditPlace, type VerifyReport, verifyAudit } from './verify.js';
