// The audit trail in PostgreSQL: one hash chain per replica in a shared table, each checked by
// `audit verify` from its signed start to its signed head.
export type { ChainReport, ChainsReport } from './report.js';
export { PgAuditTrail, type PgAuditTrailOptions } from './trail.js';
export { verifyChains } from './verify.js';
