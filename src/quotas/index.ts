// Per-principal quotas (CODEXEC_QUOTAS): concurrent runs, sessions, runs per minute and CPU seconds
// per UTC day; the gate and the session manager ask before anything runs.

import { join } from 'node:path';
import type { Config } from '../config/index.js';
import { CpuLedger } from './ledger.js';
import { Quotas } from './quotas.js';

export { CpuLedger, utcDay } from './ledger.js';
export { Quotas, type RunHold } from './quotas.js';
export { onQuotaRefusal } from './refusal.js';

/** Where the per-day CPU usage is kept across restarts. */
export const USAGE_FILE = 'quota-usage.json';

/** The server's quotas, or undefined when CODEXEC_QUOTAS is not set. */
export function createQuotas(config: Pick<Config, 'home' | 'quotas'>): Quotas | undefined {
  if (!config.quotas) return undefined;
  return new Quotas(config.quotas.table, new CpuLedger(join(config.home, USAGE_FILE), Date.now()));
}
