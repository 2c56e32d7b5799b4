// The audit trail (ADR 036): one hash-chained, HMAC-signed JSONL entry per attempt to run code,
// refused ones too, in daily files beside the execution logs; `codexec audit verify` checks it.

export { MAX_INPUT_CHARS } from './chain.js';
export { auditFileName, KEY_FILE, listAuditFiles } from './files.js';
export { AuditTrail, type AuditTrailOptions } from './trail.js';
export { type AuditPlace, type VerifyReport, verifyAudit } from './verify.js';
