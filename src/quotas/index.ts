// Per-principal quotas (CODEXEC_QUOTAS): concurrent runs, sessions, runs per minute and CPU seconds
// per UTC day; the gate and the session manager ask before anything runs. Counted in this process
// (and quota-usage.json), or in the shared database across replicas.

export { CpuLedger, utcDay } from './ledger.js';
export { onQuotaRefusal } from './refusal.js';
export { Quotas } from './sqlite.js';
export type { RunHold, RunQuotas } from './store.js';

/** Where the per-day CPU usage is kept across restarts. */
export const USAGE_FILE = 'quota-usage.json';
