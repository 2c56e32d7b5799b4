import type { Quota, QuotaTable } from '../config/index.js';
import { QuotaExceededError, type QuotaLimit } from '../errors/index.js';
import { onQuotaRefusal } from './refusal.js';

export const MINUTE_MS = 60_000;
const DAY_MS = 86_400_000;

/** A principal's counts: runs running, runs admitted this UTC minute, CPU µs today (read if needed). */
export interface RunUsage {
  readonly running: number;
  readonly admitted: number;
  readonly cpuUsec: () => number;
}

/** `principal`'s quotas in `table`: `*`'s, with the fields of its own entry replacing them. */
export function quotaOf(table: QuotaTable, principal: string): Quota {
  return { ...table['*'], ...table[principal] };
}

/** Refuse (QUOTA_EXCEEDED) a run under `quota` at `usage`: the first limit reached, in this order. */
export function assertRunRoom(quota: Quota, usage: RunUsage, now: number): void {
  const { max_concurrent_runs: concurrent, runs_per_minute: perMinute, cpu_seconds_per_day: cpu } = quota;
  const { running, admitted } = usage;
  if (concurrent !== undefined && running >= concurrent) {
    throw refusal(
      'max_concurrent_runs',
      `${running} of your runs are running, the most your quota allows (max_concurrent_runs=${concurrent} ` +
        'in CODEXEC_QUOTAS); nothing ran. Try again when one ends',
    );
  }
  const minute = Math.floor(now / MINUTE_MS);
  if (perMinute !== undefined && admitted >= perMinute) {
    throw refusal(
      'runs_per_minute',
      `${admitted} of your runs started this minute (UTC), the most your quota allows (runs_per_minute=` +
        `${perMinute} in CODEXEC_QUOTAS); nothing ran. Try again when the next minute starts`,
      (minute + 1) * MINUTE_MS - now,
    );
  }
  const used = usage.cpuUsec() / 1e6;
  if (cpu !== undefined && used >= cpu) {
    throw refusal(
      'cpu_seconds_per_day',
      `your runs used ${used.toFixed(1)} CPU seconds today (UTC), your quota's budget (cpu_seconds_per_day=` +
        `${cpu} in CODEXEC_QUOTAS); nothing ran. The budget starts again at 00:00 UTC`,
      (Math.floor(now / DAY_MS) + 1) * DAY_MS - now,
    );
  }
}

/** Refuse (QUOTA_EXCEEDED) a new session under `quota` with `open` sessions counted. */
export function assertSessionRoom(quota: Quota, open: number): void {
  const max = quota.max_sessions;
  if (max !== undefined && open >= max) {
    throw refusal(
      'max_sessions',
      `${open} of your sessions are open, the most your quota allows (max_sessions=${max} in ` +
        'CODEXEC_QUOTAS); close one with close_session, or reuse one listed by list_sessions',
    );
  }
}

function refusal(limit: QuotaLimit, message: string, retryAfterMs?: number): QuotaExceededError {
  onQuotaRefusal(limit);
  return new QuotaExceededError(message, limit, retryAfterMs);
}
