// The audit trail (ADR 036): one hash-chained JSONL entry per attempt to run code, refused ones
// too, in daily files beside the execution logs; `codexec audit verify` checks the chain.

export { MAX_INPUT_CHARS } from './chain.js';
export { auditFileName, listAuditFiles } from './files.js';
export { AuditTrail, type AuditTrailOptions } from './trail.js';
export { type AuditPlace, type VerifyReport, verifyAudit } from './verify.js';
