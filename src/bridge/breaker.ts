// A circuit breaker per downstream server: after `threshold` failures in a row the
// circuit opens and calls fail at once for `openMs`; then one call may try (half-open): success
// closes it, failure opens it again. A dead server costs the code one clear error, not a timeout
// per call.

export interface BreakerOptions {
  readonly threshold: number;
  readonly openMs: number;
}

export const BREAKER_DEFAULTS: BreakerOptions = { threshold: 5, openMs: 30_000 };

export class CircuitBreaker {
  private failures = 0;
  private openedAt: number | undefined;
  private trying = false;

  constructor(
    private readonly options: BreakerOptions = BREAKER_DEFAULTS,
    private readonly now: () => number = Date.now,
  ) {}

  get state(): 'closed' | 'open' | 'half-open' {
    if (this.openedAt === undefined) return 'closed';
    return this.now() - this.openedAt >= this.options.openMs ? 'half-open' : 'open';
  }

  /** Whether a call may go now; in half-open, only the first one does. */
  admit(): boolean {
    const state = this.state;
    if (state === 'closed') return true;
    if (state === 'open' || this.trying) return false;
    this.trying = true;
    return true;
  }

  /** Failures in a row so far, and how many open the circuit. */
  get failureCount(): number {
    return this.failures;
  }

  get threshold(): number {
    return this.options.threshold;
  }

  /** Seconds until calls may try again (open circuit). */
  retryInSeconds(): number {
    return Math.ceil((this.options.openMs - (this.now() - (this.openedAt ?? 0))) / 1000);
  }

  succeeded(): void {
    this.failures = 0;
    this.openedAt = undefined;
    this.trying = false;
  }

  failed(): void {
    this.trying = false;
    this.failures += 1;
    if (this.openedAt !== undefined || this.failures >= this.options.threshold) this.openedAt = this.now();
  }
}
