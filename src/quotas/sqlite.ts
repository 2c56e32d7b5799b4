// Quotas counted without a shared database (CODEXEC_STORE=sqlite, the default): in this process,
// CPU seconds kept across restarts in quota-usage.json (CpuLedger).
import type { Quota, QuotaTable } from '../config/index.js';
import type { CpuLedger } from './ledger.js';
import { assertRunRoom, assertSessionRoom, MINUTE_MS, quotaOf } from './limits.js';
import type { RunHold, RunQuotas } from './store.js';

/**
 * The per-principal quotas of CODEXEC_QUOTAS, counted in this process. A principal's quota is
 * `*`'s fields with its own entry's on top. Runs: concurrency while admitted, a fixed UTC-minute
 * window of admissions, CPU seconds per UTC day (charged when a run ends; a run that starts with
 * budget left is never cut short). Sessions: the count the session manager keeps, checked here.
 * Every refusal goes through onQuotaRefusal.
 */
export class Quotas implements RunQuotas {
  private readonly running = new Map<string, number>();
  /** Per principal: the UTC minute (ms since the epoch / 60 000) and the runs admitted in it. */
  private readonly minutes = new Map<string, { readonly minute: number; count: number }>();

  constructor(
    private readonly table: QuotaTable,
    private readonly ledger: CpuLedger,
    private readonly now: () => number = Date.now,
  ) {}

  of(principal: string): Quota {
    return quotaOf(this.table, principal);
  }

  check(principal: string): void {
    const now = this.now();
    const window = this.minutes.get(principal);
    assertRunRoom(
      this.of(principal),
      {
        running: this.running.get(principal) ?? 0,
        admitted: window?.minute === Math.floor(now / MINUTE_MS) ? window.count : 0,
        cpuUsec: () => this.ledger.used(principal, now),
      },
      now,
    );
  }

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

  assertSessionRoom(principal: string, open: number): void {
    assertSessionRoom(this.of(principal), open);
  }
}
