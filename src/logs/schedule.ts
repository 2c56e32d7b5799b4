import { log } from '../util/index.js';

const FIRST_MS = 30_000;
const EVERY_MS = 3_600_000;

/**
 * Log retention in the background, for either index (index.db or the shared tables): once
 * started, 30 s later and then hourly (unref'd timers: they never keep the process alive), one
 * pass at a time; a failed pass is logged, the next one tries again.
 */
export class RetentionSchedule {
  private readonly timers: NodeJS.Timeout[] = [];
  private running: Promise<unknown> | undefined;
  private stopped = false;
  private begun = false;

  constructor(private readonly pass: () => Promise<unknown>) {}

  /** Whether start() was called. */
  get started(): boolean {
    return this.begun;
  }

  start(): void {
    if (this.begun || this.stopped) return;
    this.begun = true;
    this.timers.push(setTimeout(() => this.runNow(), FIRST_MS).unref());
    this.timers.push(setInterval(() => this.runNow(), EVERY_MS).unref());
  }

  /** A pass now, unless one is running or the schedule stopped. */
  runNow(): void {
    if (this.stopped || this.running) return;
    this.running = this.pass()
      .catch((error: Error) => log('warn', `log retention failed: ${error.message}`))
      .finally(() => {
        this.running = undefined;
      });
  }

  /** No more passes; resolves once a running one has finished. */
  async stop(): Promise<void> {
    this.stopped = true;
    for (const timer of this.timers) clearTimeout(timer);
    await this.running;
  }
}
