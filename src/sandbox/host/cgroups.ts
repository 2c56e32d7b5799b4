// Per-run cgroups for memory and process-count limits, on cgroup v1 and v2. The run's cgroup is
// created under the server's own cgroup (read from /proc/self/cgroup) and removed in dispose().
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import { rmdir, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { log } from '../../util/index.js';
import type { LimitKind } from '../types.js';
import { HeldFiles } from './held-files.js';

/** Emptied run cgroups kept for reuse (RunCgroups); beyond these, they are removed. */
const SPARE_CGROUPS = 16;
/**
 * Memory a reused cgroup may still have charged (kernel objects, page cache): a `print(1)` run
 * leaves 0.4-0.9 MB here. The bound keeps that from adding up over reuses.
 */
const REUSABLE_MB = 2;

/** Where our cgroup lives for each controller (v2: one directory holds both). */
export interface CgroupLayout {
  readonly version: 1 | 2;
  readonly memory: string;
  readonly pids: string;
  /** v1: the cpuacct hierarchy's directory, where it is mounted (v2: cpu.stat is in every cgroup). */
  readonly cpu?: string;
}

export interface CgroupLimits {
  readonly memoryMb: number;
  readonly maxProcs: number;
}

/** One run's cgroup(s): limits written, processes joined by pid, removed when empty. */
export class RunCgroup {
  private removed = false;
  /**
   * The counters read at each run's end (~7 reads a run: limits hit, CPU, memory), held open. Not
   * cgroup.procs: v1 keeps the listing it made for a descriptor up to a second, stale by then.
   */
  private readonly files = new HeldFiles();

  constructor(
    private readonly layout: CgroupLayout,
    readonly dirs: readonly string[],
  ) {}

  private current: CgroupLimits | undefined;

  /** v2: the parent's count of forks its limit refused, when this cgroup was given its run. */
  private parentForkFailures = 0;

  /** Write the limits (nothing to do when they are already these). */
  setLimits(limits: CgroupLimits): void {
    if (this.layout.version === 2) this.parentForkFailures = counter(PARENTS, this.parentPidsEvents(), 'max');
    if (this.current?.memoryMb === limits.memoryMb && this.current.maxProcs === limits.maxProcs) return;
    const bytes = String(limits.memoryMb * 1024 * 1024);
    const [memoryDir = '', pidsDir = memoryDir] = this.dirs;
    if (this.layout.version === 1) {
      // With swap accounting memory+swap is capped too, so swapping cannot dodge the limit. It must
      // stay >= memory.limit: raising writes it first, lowering after (the first try then fails).
      writeIgnoringErrors(join(memoryDir, 'memory.memsw.limit_in_bytes'), bytes);
      writeFileSync(join(memoryDir, 'memory.limit_in_bytes'), bytes);
      writeIgnoringErrors(join(memoryDir, 'memory.memsw.limit_in_bytes'), bytes);
    } else {
      writeFileSync(join(memoryDir, 'memory.max'), bytes);
      writeIgnoringErrors(join(memoryDir, 'memory.swap.max'), '0');
    }
    writeFileSync(join(pidsDir, 'pids.max'), String(limits.maxProcs));
    this.current = { memoryMb: limits.memoryMb, maxProcs: limits.maxProcs };
  }

  /**
   * Move `pid` in. Async on purpose: the first migration waits for an RCU grace period in the
   * kernel (5-25 ms on cgroup v1), which must not stall the server's event loop.
   */
  async join(pid: number): Promise<void> {
    for (const dir of this.dirs) await writeFile(join(dir, 'cgroup.procs'), String(pid));
  }

  pids(): number[] {
    const dir = this.dirs[0];
    if (!dir) return [];
    try {
      return readFileSync(join(dir, 'cgroup.procs'), 'utf8').split('\n').filter(Boolean).map(Number);
    } catch {
      return [];
    }
  }

  /** SIGKILL every member (`members`: a listing just read, where v2's cgroup.kill is missing). */
  killAll(members?: readonly number[]): void {
    const killFile = join(this.dirs[0] ?? '', 'cgroup.kill');
    if (this.layout.version === 2 && existsSync(killFile)) {
      writeIgnoringErrors(killFile, '1');
      return;
    }
    for (const pid of members ?? this.pids()) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
  }

  /** SIGSTOP every member, again until a listing shows none new (a stopped process cannot fork). */
  stopAll(): void {
    const stopped = new Set<number>();
    for (let fresh = this.pids(); fresh.length > 0; fresh = this.pids().filter((pid) => !stopped.has(pid))) {
      for (const pid of fresh) {
        stopped.add(pid);
        try {
          process.kill(pid, 'SIGSTOP');
        } catch {
          // already gone
        }
      }
    }
  }

  /** Memory charged to the cgroup now (resident memory, page cache, tmpfs), in MB. */
  memoryMb(): number | undefined {
    const file = this.layout.version === 1 ? 'memory.usage_in_bytes' : 'memory.current';
    try {
      return Number(this.files.read(join(this.dirs[0] ?? '', file))) / (1024 * 1024);
    } catch {
      return undefined;
    }
  }

  /**
   * CPU time the cgroup's processes used since it was made, in µs (cumulative: a reused cgroup's
   * count goes on, so callers take a difference); undefined where nothing counts it.
   */
  cpuUsec(): number | undefined {
    if (this.layout.version === 2) {
      const usec = counter(this.files, join(this.dirs[0] ?? '', 'cpu.stat'), 'usage_usec');
      return usec > 0 ? usec : undefined;
    }
    const cpu = this.layout.cpu && this.dirs[2];
    const ns = cpu ? readNumber(this.files, join(cpu, 'cpuacct.usage')) : undefined;
    return ns === undefined ? undefined : Math.round(ns / 1000);
  }

  /** Which cgroup limit stopped something in this run, if any. */
  limitHit(): LimitKind | undefined {
    const [memoryDir, pidsDir = memoryDir] = this.dirs;
    if (!memoryDir || !pidsDir) return undefined;
    const memoryEvents = this.layout.version === 1 ? 'memory.oom_control' : 'memory.events';
    if (counter(this.files, join(memoryDir, memoryEvents), 'oom_kill') > 0) return 'memory';
    if (counter(this.files, join(pidsDir, 'pids.events'), 'max') > 0) return 'processes';
    // v2 counts a fork the parent's limit refused on the parent only: every run alive then is told.
    if (
      this.layout.version === 2 &&
      counter(PARENTS, this.parentPidsEvents(), 'max') > this.parentForkFailures
    )
      return 'processes';
    return undefined;
  }

  /**
   * Whether the limit this run hit was its parent's (all runs together, CODEXEC_TOTAL_*) rather
   * than its own: the run never came near its own limit.
   */
  hitTotal(kind: LimitKind): boolean {
    const [memoryDir = '', pidsDir = memoryDir] = this.dirs;
    if (kind === 'memory') {
      // v2 counts the OOM on the cgroup whose limit was reached (and its ancestors).
      if (this.layout.version === 2)
        return counter(this.files, join(memoryDir, 'memory.events'), 'oom') === 0;
      // v1 counts the kill on the victim's cgroup only: its own limit, if its usage ever reached it.
      const peak = readNumber(this.files, join(memoryDir, 'memory.max_usage_in_bytes'));
      const limit = readNumber(this.files, join(memoryDir, 'memory.limit_in_bytes'));
      return peak !== undefined && limit !== undefined && peak < limit - 1024 * 1024;
    }
    if (kind === 'processes') {
      const peak = readNumber(this.files, join(pidsDir, 'pids.peak'));
      const max = readNumber(this.files, join(pidsDir, 'pids.max'));
      return peak !== undefined && max !== undefined && peak < max;
    }
    return false;
  }

  /**
   * A reused cgroup's memory peak starts again (v1; writing resets it to the usage now): hitTotal
   * reads it as this run's, and an earlier run's that came near its own limit would blame that
   * limit for a kill by the total's. v2 needs none: it counts the OOM where the limit was reached.
   */
  resetPeak(): void {
    if (this.layout.version === 1)
      writeIgnoringErrors(join(this.dirs[0] ?? '', 'memory.max_usage_in_bytes'), '0');
  }

  private parentPidsEvents(): string {
    return join(dirname(this.dirs[1] ?? this.dirs[0] ?? ''), 'pids.events');
  }

  /** Kill every member and wait (up to `ms`) until the kernel has reaped them; true once empty. */
  async drain(ms = 3000): Promise<boolean> {
    const deadline = Date.now() + ms;
    // Members of a dead pid namespace take a moment to be reaped: poll fast, then back off.
    for (let wait = 1; ; wait = Math.min(wait * 2, 50)) {
      const members = this.pids();
      if (members.length === 0) return true;
      if (Date.now() >= deadline) return false;
      this.killAll(members);
      await sleep(wait);
    }
  }

  /**
   * Whether a drained cgroup can serve another run as if new: no limit event counted (the counters
   * never reset) and next to no memory still charged (page cache the run left).
   */
  reusable(): boolean {
    return this.limitHit() === undefined && (this.memoryMb() ?? Number.POSITIVE_INFINITY) < REUSABLE_MB;
  }

  /** Remove the cgroup(s) once the kernel has reaped every member (waits up to `ms`). */
  async remove(ms = 3000): Promise<void> {
    await this.drain(ms);
    try {
      await this.removeAsync();
    } catch (error) {
      // Never fail a finished run over cleanup; the next server's sweep removes it once empty.
      log('warn', `could not remove cgroup ${this.dirs.join(', ')}: ${(error as Error).message}`);
    }
  }

  /** Best effort, synchronous (process exit): members just killed may not be reaped yet. */
  tryRemove(): boolean {
    try {
      this.removeNow();
      return true;
    } catch {
      return false; // a later server's sweep removes it once empty
    }
  }

  /** As removeNow, off the event loop: rmdir of a cgroup can take a while in the kernel. */
  private async removeAsync(): Promise<void> {
    if (this.removed) return;
    const results = await Promise.allSettled(this.dirs.map((dir) => rmdir(dir)));
    const failure = results.find(
      (r): r is PromiseRejectedResult =>
        r.status === 'rejected' && (r.reason as NodeJS.ErrnoException).code !== 'ENOENT',
    );
    if (failure) throw failure.reason;
    this.removed = true;
    this.files.close();
  }

  removeNow(): void {
    if (this.removed) return;
    let failure: unknown;
    for (const dir of this.dirs) {
      try {
        rmdirSync(dir);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'ENOENT') failure ??= error;
      }
    }
    if (failure) throw failure;
    this.removed = true;
    this.files.close();
  }
}

/**
 * Makes run cgroups, and keeps a few a run has emptied for the next ones instead of removing them:
 * a cgroup's mkdir and rmdir cost ~1 ms of kernel time each on the server's thread (cgroup v1: two
 * directories), per run.
 */
export class RunCgroups {
  private readonly spare: RunCgroup[] = [];

  constructor(
    private readonly layout: CgroupLayout,
    private readonly keep = SPARE_CGROUPS,
  ) {}

  create(limits: CgroupLimits): RunCgroup {
    const spare = this.spare.pop();
    if (spare) {
      try {
        spare.setLimits(limits);
        spare.resetPeak();
        return spare;
      } catch {
        void spare.remove(); // e.g. a memory limit below what it still has charged
      }
    }
    return createRunCgroup(this.layout, limits);
  }

  /** A run is over: its cgroup is emptied, then kept for another (true) or removed (false). */
  async release(cgroup: RunCgroup): Promise<boolean> {
    if ((await cgroup.drain()) && this.spare.length < this.keep && cgroup.reusable()) {
      this.spare.push(cgroup);
      return true;
    }
    await cgroup.remove();
    return false;
  }
}

export function createRunCgroup(layout: CgroupLayout, limits: CgroupLimits): RunCgroup {
  // The server's pid in the name lets a later server remove what a crashed one left behind.
  const name = `codexec-run-${process.pid}-${randomBytes(4).toString('hex')}`;
  // v1: memory, pids, then cpuacct where it is mounted (cpuUsec reads dirs[2]).
  const dirs =
    layout.version === 1
      ? [join(layout.memory, name), join(layout.pids, name), ...(layout.cpu ? [join(layout.cpu, name)] : [])]
      : [join(layout.memory, name)];
  const made: string[] = [];
  try {
    for (const dir of dirs) {
      mkdirSync(dir);
      made.push(dir);
    }
    const run = new RunCgroup(layout, dirs);
    run.setLimits(limits);
    return run;
  } catch (error) {
    for (const dir of made) rmdirSync(dir);
    throw error;
  }
}

/** The parents' pids.events, read at each run's start and end: the server's cgroups, held for its life. */
const PARENTS = new HeldFiles();

function counter(files: HeldFiles, file: string, key: string): number {
  try {
    const line = files
      .read(file)
      .split('\n')
      .find((l) => l.startsWith(`${key} `));
    return line ? Number(line.slice(key.length + 1)) || 0 : 0;
  } catch {
    return 0;
  }
}

function readNumber(files: HeldFiles, file: string): number | undefined {
  try {
    const value = Number(files.read(file));
    return Number.isFinite(value) ? value : undefined; // 'max': no limit
  } catch {
    return undefined;
  }
}

function writeIgnoringErrors(file: string, value: string): void {
  try {
    writeFileSync(file, value);
  } catch {
    // optional knob (no swap accounting, older kernel): the main limit still applies
  }
}
