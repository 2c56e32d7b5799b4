// The audit trail without a shared database (CODEXEC_STORE=sqlite, the default): daily JSONL files
// beside the execution logs, one chain across them, an anchor file and a lock between writers.
export { auditFileName, KEY_FILE, listAuditFiles } from './files.js';
export { AuditTrail, type AuditTrailOptions } from './trail.js';
export { type AuditPlace, type VerifyReport, verifyAudit } from './verify.js';
