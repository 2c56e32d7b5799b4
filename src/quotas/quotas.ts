import type { Quota, QuotaTable } from '../config/index.js';
import { QuotaExceededError, type QuotaLimit } from '../errors/index.js';
import type { CpuLedger } from './ledger.js';
import { onQuotaRefusal } from './refusal.js';

const MINUTE_MS = 60_000;
const DAY_MS = 86_400_000;

/** A run admitted under its principal's quotas: `end` once it is over, with the CPU it used. */
export interface RunHold {
  end(cpuUsec: number): void;
}

/**
 * The per-principal quotas of CODEXEC_QUOTAS. A principal's quota is `*`'s fields with its own
 * entry's on top. Runs: concurrency while admitted, a fixed UTC-minute window of admissions, CPU
 * seconds per UTC day (charged when a run ends; a run that starts with budget left is never cut
 * short). Sessions: the count the session manager keeps, checked here. Every refusal goes through
 * onQuotaRefusal.
 */
export class Quotas {
  private readonly running = new Map<string, number>();
  /** Per principal: the UTC minute (ms since the epoch / 60 000) and the runs admitted in it. */
  private readonly minutes = new Map<string, { readonly minute: number; count: number }>();

  constructor(
    private readonly table: QuotaTable,
    private readonly ledger: CpuLedger,
    private readonly now: () => number = Date.now,
  ) {}

  /** `principal`'s quotas: `*`'s, with the fields of its own entry replacing them. */
  of(principal: string): Quota {
    return { ...this.table['*'], ...this.table[principal] };
  }

  /** Refuse (QUOTA_EXCEEDED) a run `principal` may not start now; counts nothing. */
  check(principal: string): void {
    const quota = this.of(principal);
    const now = this.now();
    const { max_concurrent_runs: concurrent, runs_per_minute: perMinute, cpu_seconds_per_day: cpu } = quota;
    const running = this.running.get(principal) ?? 0;
    if (concurrent !== undefined && running >= concurrent) {
      throw refusal(
        'max_concurrent_runs',
        `${running} of your runs are running, the most your quota allows (max_concurrent_runs=${concurrent} ` +
          'in CODEXEC_QUOTAS); nothing ran. Try again when one ends',
      );
    }
    const minute = Math.floor(now / MINUTE_MS);
    const window = this.minutes.get(principal);
    const admitted = window?.minute === minute ? window.count : 0;
    if (perMinute !== undefined && admitted >= perMinute) {
      throw refusal(
        'runs_per_minute',
        `${admitted} of your runs started this minute (UTC), the most your quota allows (runs_per_minute=` +
          `${perMinute} in CODEXEC_QUOTAS); nothing ran. Try again when the next minute starts`,
        (minute + 1) * MINUTE_MS - now,
      );
    }
    const used = this.ledger.used(principal, now) / 1e6;
    if (cpu !== undefined && used >= cpu) {
      throw refusal(
        'cpu_seconds_per_day',
        `your runs used ${used.toFixed(1)} CPU seconds today (UTC), your quota's budget (cpu_seconds_per_day=` +
          `${cpu} in CODEXEC_QUOTAS); nothing ran. The budget starts again at 00:00 UTC`,
        (Math.floor(now / DAY_MS) + 1) * DAY_MS - now,
      );
    }
  }

  /** Admit a run of `principal` (or refuse it as check does): it counts until its hold ends. */
  admit(principal: string): RunHold {
    this.check(principal);
    const minute = Math.floor(this.now() / MINUTE_MS);
    const window = this.minutes.get(principal);
    if (window?.minute === minute) window.count += 1;
    else this.minutes.set(principal, { minute, count: 1 });
    this.running.set(principal, (this.running.get(principal) ?? 0) + 1);
    let ended = false;
    return {
      end: (cpuUsec) => {
        if (ended) return;
        ended = true;
        const left = (this.running.get(principal) ?? 1) - 1;
        if (left > 0) this.running.set(principal, left);
        else this.running.delete(principal);
        this.ledger.charge(principal, cpuUsec, this.now());
      },
    };
  }

  /** Refuse (QUOTA_EXCEEDED) a new session of `principal`, who has `open` sessions counted. */
  assertSessionRoom(principal: string, open: number): void {
    const max = this.of(principal).max_sessions;
    if (max !== undefined && open >= max) {
      throw refusal(
        'max_sessions',
        `${open} of your sessions are open, the most your quota allows (max_sessions=${max} in ` +
          'CODEXEC_QUOTAS); close one with close_session, or reuse one listed by list_sessions',
      );
    }
  }
}

function refusal(limit: QuotaLimit, message: string, retryAfterMs?: number): QuotaExceededError {
  onQuotaRefusal(limit);
  return new QuotaExceededError(message, limit, retryAfterMs);
}
