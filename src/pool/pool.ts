import { rm } from 'node:fs/promises';
import { availableParallelism } from 'node:os';
import type { InterpreterKind } from '../runtimes/index.js';
import { log } from '../util/index.js';
import { Demand } from './demand.js';
import { SWEEP_MIN_AGE_MS, sweepWorkspaces } from './sweep.js';
import type { WarmProcess } from './warm.js';

export interface PoolOptions {
  /**
   * Warm processes kept per interpreter, at least; 0 disables the pool. Under load a kind keeps
   * more, as many as start while its runs arrive (demand.ts), up to `maxSize`.
   */
  readonly size: number;
  /** The most processes of one kind ready or starting (default: MAX_PER_KIND, or `size` if larger). */
  readonly maxSize?: number;
  /** The most starts under way at once, all kinds together (default: the CPUs there are). */
  readonly maxStarting?: number;
  /** Kill a kind's warm processes after this long without a request. */
  readonly idleMs: number;
  /** Memory all waiting processes together may use (MB); none is started beyond it. */
  readonly memoryMb: number;
  /** Start one warm process of `kind` (its workspace included). */
  readonly start: (kind: InterpreterKind) => Promise<WarmProcess>;
  /** Where workspaces are: what a killed server left there is removed, from the first run on. */
  readonly sandboxDir?: string;
}

/** How often the workspaces are swept again (sooner while some were too young to tell). */
const SWEEP_EVERY_MS = 10 * 60_000;
/**
 * The most processes of a kind kept ready or starting, whatever the arrival rate: more at once
 * would only share the same CPUs (a container start costs ~0.2 s of CPU here).
 */
const MAX_PER_KIND = 8;

/**
 * Pre-started sandboxed interpreters, per interpreter kind. Each is used for exactly one execution
 * and then discarded, so one-shot semantics hold; the pool refills in the background. A kind is
 * only warmed after its first request (clients spawn throwaway servers just to probe), and shrinks
 * back to nothing when idle.
 */
/** What a waiting process of each kind adds, until one has been measured here (MB; about twice
 * what its sandbox's cgroup is charged: shared libraries are already in memory). */
const FIRST_GUESS: Record<InterpreterKind, number> = { python: 8, node: 16, bash: 4 };

export class WarmPool {
  private readonly ready = new Map<InterpreterKind, WarmProcess[]>();
  private readonly filling = new Map<InterpreterKind, number>();
  private readonly idleTimers = new Map<InterpreterKind, NodeJS.Timeout>();
  private readonly failures = new Map<InterpreterKind, number>();
  private readonly demand = new Map<InterpreterKind, Demand>();
  /** The last measured memory of a waiting process of each kind, and of each ready process. */
  private readonly typical = new Map<InterpreterKind, number>();
  private readonly memory = new Map<WarmProcess, number>();
  /** Starts under way: shutdown waits for them, so none is left running unowned. */
  private readonly starting = new Set<Promise<unknown>>();
  private closed = false;

  constructor(private readonly options: PoolOptions) {}

  /**
   * A live warm process of `kind`, or undefined (the caller runs cold). Call `replenish(kind)`
   * once the run is over: starting a replacement forks, which must not delay the run itself
   * (unless this was the last one: then it starts once the caller has handed over the job).
   */
  take(kind: InterpreterKind): WarmProcess | undefined {
    this.sweep();
    if (this.options.size === 0 || this.closed) return undefined;
    this.demandOf(kind).arrived(Date.now());
    const list: WarmProcess[] = [];
    for (const warm of this.ready.get(kind) ?? []) {
      if (warm.alive) list.push(warm);
      else void this.cleanup(warm);
    }
    // One whose driver waits already, else the oldest still starting (it is further on than a cold run).
    const [warm] = list.splice(
      Math.max(
        list.findIndex((each) => each.isReady),
        0,
      ),
      1,
    );
    this.ready.set(kind, list);
    if (warm) {
      this.failures.set(kind, 0);
      this.memory.delete(warm);
    }
    this.touch(kind);
    // The last one is gone: its replacement starts now, not after this run (the next run would
    // find none). Once this run's job is out: a start may fork the server.
    if (warm && list.length === 0 && !this.filling.get(kind)) setImmediate(() => this.replenish(kind));
    return warm;
  }

  /** How many processes of each kind wait now (health). */
  readyCounts(): Record<string, number> {
    return Object.fromEntries(
      [...this.ready].map(([kind, list]) => [kind, list.filter((warm) => warm.alive).length]),
    );
  }

  /** Top the pool of `kind` back up (in the background). */
  replenish(kind: InterpreterKind): void {
    if (this.options.size === 0 || this.closed) return;
    this.refill(kind);
  }

  /** Throw away every warm process (e.g. the global package environment changed). */
  async flush(): Promise<void> {
    const all = [...this.ready.values()].flat();
    this.ready.clear();
    await Promise.all(all.map((warm) => this.cleanup(warm)));
  }

  async shutdown(): Promise<void> {
    this.closed = true;
    for (const timer of this.idleTimers.values()) clearTimeout(timer);
    await Promise.allSettled([...this.starting]);
    await this.flush();
  }

  /** How many processes of `kind` to keep ready or starting now. */
  target(kind: InterpreterKind): number {
    const { size, maxSize = Math.max(size, MAX_PER_KIND) } = this.options;
    return this.demandOf(kind).target(size, maxSize, Date.now());
  }

  private demandOf(kind: InterpreterKind): Demand {
    const known = this.demand.get(kind);
    if (known) return known;
    const demand = new Demand();
    this.demand.set(kind, demand);
    return demand;
  }

  /**
   * Processes of every kind under way: asked for, or handed over but not yet waiting for a job.
   * More at once than there are CPUs only share them, and slow each other down (container engines
   * lock their state: two dozen `podman run`s at once took seconds each here).
   */
  private underWay(): number {
    let count = 0;
    for (const filling of this.filling.values()) count += filling;
    for (const list of this.ready.values()) for (const warm of list) if (!warm.isReady) count++;
    return count;
  }

  /** Kinds whose refill stopped at maxStarting: topped up again as a start is over. */
  private readonly deferred = new Set<InterpreterKind>();

  private topUp(): void {
    const kinds = [...this.deferred];
    this.deferred.clear();
    for (const kind of kinds) if (!this.closed && this.idleTimers.has(kind)) this.refill(kind);
  }

  private refill(kind: InterpreterKind): void {
    const have = (this.ready.get(kind)?.length ?? 0) + (this.filling.get(kind) ?? 0);
    const target = this.target(kind);
    const most = this.options.maxStarting ?? Math.max(1, availableParallelism());
    for (let i = have; i < target && this.fits(kind); i++) {
      if (this.underWay() >= most) {
        this.deferred.add(kind);
        return;
      }
      this.filling.set(kind, (this.filling.get(kind) ?? 0) + 1);
      const asked = Date.now();
      const start = this.options
        .start(kind)
        .then((warm) => {
          if (this.closed || !this.idleTimers.has(kind)) return this.cleanup(warm);
          this.ready.get(kind)?.push(warm) ?? this.ready.set(kind, [warm]);
          // Measured once the driver has warmed up and waits; until then it counts as typical.
          void warm.ready.then(() => {
            this.demandOf(kind).started(Date.now() - asked);
            setImmediate(() => this.topUp());
            const used = warm.memoryMb();
            if (used === undefined || !this.ready.get(kind)?.includes(warm)) return;
            this.memory.set(warm, used);
            this.typical.set(kind, Math.max(used, this.typical.get(kind) ?? 0));
          });
          // A process that dies while waiting is replaced, unless they keep dying.
          void warm.proc.exited.then(() => this.replaceDead(kind, warm));
        })
        .catch((error: Error) => {
          this.failures.set(kind, (this.failures.get(kind) ?? 0) + 1);
          log('warn', `warm ${kind} process could not start: ${error.message}`);
        })
        .finally(() => {
          this.filling.set(kind, (this.filling.get(kind) ?? 1) - 1);
          this.starting.delete(start);
        });
      this.starting.add(start);
    }
  }

  /** Room in the memory budget for one more process of `kind`, counting those still starting. */
  private fits(kind: InterpreterKind): boolean {
    const guess = (k: InterpreterKind) => this.typical.get(k) ?? FIRST_GUESS[k];
    let used = 0;
    for (const [k, list] of this.ready) for (const warm of list) used += this.memory.get(warm) ?? guess(k);
    for (const [k, count] of this.filling) used += count * guess(k);
    return used + guess(kind) <= this.options.memoryMb;
  }

  private replaceDead(kind: InterpreterKind, warm: WarmProcess): void {
    const list = this.ready.get(kind);
    const index = list?.indexOf(warm) ?? -1;
    if (!list || index === -1) return; // it was taken: its run owns it now
    list.splice(index, 1);
    void this.cleanup(warm);
    const failures = (this.failures.get(kind) ?? 0) + 1;
    this.failures.set(kind, failures);
    if (failures <= 3) this.refill(kind);
    else log('warn', `warm ${kind} processes keep dying while idle; running ${kind} cold`);
  }

  private nextSweep = 0;

  /** In the background, at most once per SWEEP_EVERY_MS: workspaces of servers killed earlier. */
  private sweep(): void {
    const dir = this.options.sandboxDir;
    if (dir === undefined || this.closed || Date.now() < this.nextSweep) return;
    this.nextSweep = Number.POSITIVE_INFINITY; // one at a time
    void sweepWorkspaces(dir)
      .then(({ removed, young }) => {
        if (removed.length > 0) log('info', `removed ${removed.length} workspace(s) left by a killed server`);
        this.nextSweep = Date.now() + (young > 0 ? SWEEP_MIN_AGE_MS : SWEEP_EVERY_MS);
      })
      .catch((error: Error) => {
        log('warn', `could not sweep the workspaces: ${error.message}`);
        this.nextSweep = Date.now() + SWEEP_EVERY_MS;
      });
  }

  private touch(kind: InterpreterKind): void {
    clearTimeout(this.idleTimers.get(kind));
    const timer = setTimeout(() => {
      this.idleTimers.delete(kind);
      this.demand.delete(kind); // the next request starts from `size` again
      const list = this.ready.get(kind) ?? [];
      this.ready.delete(kind);
      for (const warm of list) void this.cleanup(warm);
    }, this.options.idleMs);
    timer.unref();
    this.idleTimers.set(kind, timer);
  }

  private async cleanup(warm: WarmProcess): Promise<void> {
    this.memory.delete(warm);
    await warm.discard().catch(() => {});
    await rm(warm.execDir, { recursive: true, force: true });
  }
}
