// Per-principal quotas (CODEXEC_QUOTAS): concurrent runs, sessions, runs per minute and CPU seconds
// per UTC day; the gate and the session manager ask before anything runs. Counted in this process
// (and quota-usage.json), or in the shared database across replicas.

import { join } from 'node:path';
import type { Config } from '../config/index.js';
import type { Postgres } from '../store/index.js';
import { CpuLedger } from './ledger.js';
import type { RunQuotas } from './limits.js';
import { Quotas } from './quotas.js';
import { SharedQuotas } from './shared.js';

export { CpuLedger, utcDay } from './ledger.js';
export type { RunHold, RunQuotas } from './limits.js';
export { Quotas } from './quotas.js';
export { onQuotaRefusal } from './refusal.js';
export { SharedQuotas } from './shared.js';

/** Where the per-day CPU usage is kept across restarts. */
export const USAGE_FILE = 'quota-usage.json';

/**
 * The server's quotas, or undefined when CODEXEC_QUOTAS is not set: counted in `store` when the
 * server has one (replicas share the counts), else in this process and quota-usage.json.
 */
export function createQuotas(
  config: Pick<Config, 'home' | 'quotas'>,
  store?: Postgres,
): RunQuotas | undefined {
  if (!config.quotas) return undefined;
  if (store) return new SharedQuotas(config.quotas.table, store);
  return new Quotas(config.quotas.table, new CpuLedger(join(config.home, USAGE_FILE), Date.now()));
}
