import { log } from '../util/index.js';
import { DiskQuotaError } from './errors.js';
import { type DiskUsage, measureDir } from './usage.js';

const MB = 1024 * 1024;

/** CODEXEC_MAX_WORKSPACE_MB, CODEXEC_MAX_PRINCIPAL_DISK_MB, CODEXEC_WORKSPACE_RETENTION_HOURS (ms). */
export interface DiskLimits {
  readonly workspaceMb: number;
  readonly principalMb: number;
  readonly retentionMs: number;
}

export interface WatchTiming {
  /** The first sample: a run that ends sooner is never walked while it runs (a warm run: ~3 ms). */
  readonly firstMs: number;
  /** Between samples, at least; a walk that took t ms waits 10 t at least (≤ ~10% of a thread). */
  readonly everyMs: number;
}

/** One-shot runs: a first look at 100 ms, then four a second. */
export const RUN_TIMING: WatchTiming = { firstMs: 100, everyMs: 250 };
/** Sessions live long and mostly wait: once a second. */
export const SESSION_TIMING: WatchTiming = { firstMs: 1000, everyMs: 1000 };

/** A workspace being watched; `over` is the sentence of the bound it broke, once it has. */
export interface DiskWatch {
  readonly over: string | undefined;
  stop(): void;
}

/**
 * What codexec's workspaces (runs' and sessions') hold on disk, per workspace and per principal:
 * measured on a timer while a run lives, recorded when it ends, forgotten when a workspace goes.
 * A workspace past CODEXEC_MAX_WORKSPACE_MB, or one that takes its principal past
 * CODEXEC_MAX_PRINCIPAL_DISK_MB, has its run killed; a principal at its quota starts nothing new.
 */
export class DiskQuota {
  private readonly sizes = new Map<string, { readonly principal: string; readonly bytes: number }>();
  /** The sum of `sizes` per principal, kept as they change: a run's check costs one lookup. */
  private readonly totals = new Map<string, number>();
  private readonly live = new Set<string>();
  private readonly watches = new Set<Watch>();
  private ticker: NodeJS.Timeout | undefined;
  private armedFor = Number.POSITIVE_INFINITY;

  constructor(readonly limits: DiskLimits) {}

  /** Bytes `principal`'s workspaces hold, as last measured. */
  used(principal: string): number {
    return this.totals.get(principal) ?? 0;
  }

  /** Refuse (LIMIT_REACHED) a new run or session of a principal whose workspaces fill its quota. */
  assertRoom(principal: string): void {
    const used = this.used(principal);
    if (used < this.limits.principalMb * MB) return;
    const hours = this.limits.retentionMs / 3_600_000;
    throw new DiskQuotaError(
      `the workspaces of principal "${principal}" hold ${mb(used)} MB of disk, the limit ` +
        `(CODEXEC_MAX_PRINCIPAL_DISK_MB=${this.limits.principalMb}); nothing new runs until some are ` +
        `removed: a session's when it is closed, a run's kept files ${hours} h after their last change ` +
        '(CODEXEC_WORKSPACE_RETENTION_HOURS)',
    );
  }

  record(dir: string, principal: string, bytes: number): void {
    this.forget(dir);
    this.sizes.set(dir, { principal, bytes });
    this.totals.set(principal, this.used(principal) + bytes);
  }

  forget(dir: string): void {
    const size = this.sizes.get(dir);
    if (!size) return;
    this.sizes.delete(dir);
    const left = this.used(size.principal) - size.bytes;
    if (left > 0) this.totals.set(size.principal, left);
    else this.totals.delete(size.principal);
  }

  /** Whether `dir` has been measured (and not forgotten since). */
  knows(dir: string): boolean {
    return this.sizes.has(dir);
  }

  /** Whether a run or session is using `dir` now (retention leaves it alone). */
  inUse(dir: string): boolean {
    return this.live.has(dir);
  }

  /**
   * The sentence of the bound `bytes` in `dir` breaks (recorded first), or undefined. The
   * principal's bound is broken only by a workspace that grew: a session that holds still is not
   * killed because another workspace filled the quota (its next send is refused instead).
   */
  check(dir: string, principal: string, bytes: number): string | undefined {
    const before = this.sizes.get(dir)?.bytes ?? 0;
    this.record(dir, principal, bytes);
    const { workspaceMb, principalMb } = this.limits;
    if (bytes > workspaceMb * MB)
      return `disk limit reached: the workspace holds ${mb(bytes)} MB, over CODEXEC_MAX_WORKSPACE_MB=${workspaceMb}`;
    const used = this.used(principal);
    if (used > principalMb * MB && bytes > before)
      return (
        `disk limit reached: the workspaces of principal "${principal}" hold ${mb(used)} MB, over ` +
        `CODEXEC_MAX_PRINCIPAL_DISK_MB=${principalMb}`
      );
    return undefined;
  }

  /** Measure `dir` now and record it (a kept workspace, after its run). */
  async measure(dir: string, principal: string): Promise<DiskUsage> {
    const usage = await measureDir(dir);
    this.record(dir, principal, usage.bytes);
    return usage;
  }

  /**
   * Sample `dir` on a timer (never on the run's own path) until stop(); the first sample that
   * breaks a bound calls `onOver` with its sentence, once. One timer serves every watch: a run
   * costs a set entry, not a timer of its own.
   */
  watch(dir: string, principal: string, timing: WatchTiming, onOver: (note: string) => void): DiskWatch {
    const watch = new Watch(this, dir, principal, timing, onOver);
    this.watches.add(watch);
    this.live.add(dir);
    this.arm();
    return watch;
  }

  /** @internal Watch.stop() */
  unwatch(watch: Watch): void {
    this.watches.delete(watch);
    this.live.delete(watch.dir);
    this.arm();
  }

  /**
   * @internal Wake at the earliest due watch, never on a fixed beat: a 50 ms ticker woke a server
   * with one idle session 20 times a second (and showed in paced sends' latency).
   */
  arm(): void {
    let next = Number.POSITIVE_INFINITY;
    for (const watch of this.watches) next = Math.min(next, watch.due);
    if (this.ticker && this.armedFor <= next) return;
    clearTimeout(this.ticker);
    this.ticker = undefined;
    this.armedFor = next;
    if (next === Number.POSITIVE_INFINITY) return;
    const wake = () => {
      this.ticker = undefined;
      this.armedFor = Number.POSITIVE_INFINITY;
      this.tick();
    };
    this.ticker = setTimeout(wake, Math.max(0, next - performance.now())).unref();
  }

  private tick(): void {
    const now = performance.now();
    // Watches due within the slack are sampled now too: one wake-up serves runs that started close.
    for (const watch of this.watches) if (watch.due <= now + SLACK_MS) void watch.sample(now);
    this.arm();
  }
}

/** How early a watch may be sampled to share a wake-up with another. */
const SLACK_MS = 50;

class Watch implements DiskWatch {
  over: string | undefined;
  due: number;
  private stopped = false;

  constructor(
    private readonly quota: DiskQuota,
    readonly dir: string,
    private readonly principal: string,
    private readonly timing: WatchTiming,
    private readonly onOver: (note: string) => void,
  ) {
    this.due = performance.now() + timing.firstMs;
  }

  async sample(started: number): Promise<void> {
    this.due = Number.POSITIVE_INFINITY; // one walk at a time
    try {
      const usage = await measureDir(this.dir);
      if (this.stopped) return;
      this.over = this.quota.check(this.dir, this.principal, usage.bytes);
    } catch (error) {
      log('warn', `could not measure workspace ${this.dir}: ${(error as Error).message}`);
    }
    if (this.stopped) return;
    if (this.over) {
      this.onOver(this.over);
      return;
    }
    const took = performance.now() - started;
    this.due = performance.now() + Math.max(this.timing.everyMs, 10 * took);
    this.quota.arm();
  }

  stop(): void {
    this.stopped = true;
    this.quota.unwatch(this);
  }
}

function mb(bytes: number): number {
  return Math.round((bytes / MB) * 10) / 10;
}
