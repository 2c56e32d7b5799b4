// The engine: one execution end to end — admitted, placed in a warm process or a fresh workspace,
// executed (with code mode's channel and the egress allowlist's lane), finished (artifacts,
// pictures, the log line) and released — and the warm pool it draws from. The stages are in
// run.ts, warm drivers' start in warm.ts; the engine owns what outlives a run: the pool, the live
// processes and the work left in the background.
import { setTimeout as sleep } from 'node:timers/promises';
import { SOCKET_NAME } from '../codemode/index.js';
import { PROXY_SOCKET } from '../egress/index.js';
import { WarmPool, type WarmProcess } from '../pool/index.js';
import type { InterpreterKind } from '../runtimes/index.js';
import {
  NotForkableError,
  type SandboxBackend,
  type SandboxedProcess,
  type SandboxSpec,
} from '../sandbox/index.js';
import type { EngineDeps } from './deps.js';
import { WARM_DRIVERS } from './drivers.js';
import {
  admit,
  excluded,
  execute,
  finish,
  place,
  type RunHost,
  release,
  snapshotBefore,
  unstarted,
} from './run.js';
import type { LaneOptions } from './sandbox-spec.js';
import type { ExecutionRequest, ExecutionResult, RunOptions } from './types.js';
import { LAUNCHER_WAIT_MS, startWarm } from './warm.js';

/** How long after a run its sandbox is released (killed, cgroup emptied), the result being out. */
const RELEASE_DELAY_MS = 5;

/**
 * Runs one execution end to end: workspace, script file, sandboxed process (a warm one when the
 * pool has it), bounded output, timeout cascade, artifacts, log entry.
 */
export class Engine implements RunHost {
  /** Every process started and not yet released, with the promise of its release. */
  private readonly live = new Map<SandboxedProcess, Promise<unknown>>();
  /** Aborted when the server stops: every run then ends as cancelled. */
  private readonly stopping = new AbortController();
  private readonly pending = new Set<Promise<unknown>>();
  readonly pool: WarmPool;

  constructor(readonly deps: EngineDeps) {
    this.pool = new WarmPool({
      size: deps.config.pool.size,
      idleMs: deps.config.pool.idleMs,
      memoryMb: deps.config.pool.memoryMb,
      start: (kind) => startWarm(this, kind),
      sandboxDir: deps.config.sandboxDir,
    });
  }

  /** Kill every running execution and warm process, and wait until each is reaped and released. */
  async shutdown(): Promise<void> {
    this.stopping.abort(); // each run answers as cancelled: it did not fail, the server stopped
    for (const proc of this.live.keys()) proc.kill('SIGKILL');
    await Promise.allSettled([this.pool.shutdown(), ...this.live.values()]);
    await Promise.allSettled([...this.pending, this.deps.backends.shutdown()]);
  }

  /**
   * The sandbox mode runs use: `auto` as it resolved (namespace, landlock or subprocess), found
   * on first use as runs find it; the configured mode where none is available.
   */
  async sandboxMode(): Promise<string> {
    try {
      return (await this.deps.backends.get()).mode;
    } catch {
      return this.deps.config.sandboxMode; // unavailable: each run says why
    }
  }

  /** The warm pool's target size and how many processes of each kind wait now. */
  poolStatus(): { readonly size: number; readonly ready: Record<string, number> } {
    return { size: this.deps.config.pool.size, ready: this.pool.readyCounts() };
  }

  /** Discard warm processes (they were started before the package environment changed). */
  refreshPool(): Promise<void> {
    return this.pool.flush();
  }

  async run(request: ExecutionRequest, given: RunOptions = {}): Promise<ExecutionResult> {
    // The caller's cancel or the server's stop, whichever comes first; no listener outlives the run.
    const stop = new AbortController();
    const abort = () => stop.abort();
    const sources = [given.signal, this.stopping.signal].filter((signal) => signal !== undefined);
    for (const signal of sources) signal.addEventListener('abort', abort, { once: true });
    if (sources.some((signal) => signal.aborted)) abort();
    const options = { ...given, signal: stop.signal };
    try {
      return await this.runOnce(request, options);
    } finally {
      for (const signal of sources) signal.removeEventListener('abort', abort);
    }
  }

  private async runOnce(request: ExecutionRequest, options: RunOptions): Promise<ExecutionResult> {
    const run = await place(this, request, await admit(this, request));
    try {
      const exclude = excluded(run, ['node_modules', SOCKET_NAME, PROXY_SOCKET]);
      const before = await snapshotBefore(run, exclude);
      const started = Date.now();
      const collected =
        typeof run.prepared === 'string' ? await execute(this, run, request, options) : unstarted(this, run);
      return await finish(this, run, request, collected, { before, exclude, started });
    } finally {
      await release(this, run, request);
    }
  }

  /** A cold run's sandbox, started by a launcher forked ahead where one comes in time (not by the server). */
  async spawnCold(backend: SandboxBackend, spec: SandboxSpec): Promise<SandboxedProcess> {
    await backend.reserveLauncher?.(spec, LAUNCHER_WAIT_MS);
    return backend.spawn(spec);
  }

  /** Where a sandbox of `backend` with workspace `execDir` gets its egress lane. */
  laneOf(backend: SandboxBackend, execDir: string): LaneOptions {
    return {
      egress: backend.capabilities.egress,
      workspace: execDir,
      allowed: this.deps.config.egress.allowed,
      credentials: this.deps.credentials,
      python: () => this.deps.interpreters.get('python'),
    };
  }

  /** Work that need not delay a result; shutdown waits for it. */
  background(work: Promise<unknown>): void {
    const done = work.catch(() => {}).finally(() => this.pending.delete(done));
    this.pending.add(done);
  }

  get hostEnv(): NodeJS.ProcessEnv {
    return this.deps.hostEnv ?? process.env;
  }

  timeoutMs(request: ExecutionRequest): number {
    const { config } = this.deps;
    return Math.min(request.timeoutMs ?? config.defaultTimeoutMs, config.maxTimeoutMs);
  }

  /**
   * Run `work` on `proc`, then release the process (reaped, cgroup removed, workspace given back)
   * in the background: `live` holds the release until it is done, for shutdown and for runs that
   * must wait for it.
   */
  track<T>(proc: SandboxedProcess, work: () => Promise<T>): Promise<T> {
    const result = work();
    const released = result
      .catch(() => {})
      // A moment later: the sandbox's teardown would compete with the result (ours to send, the
      // client's to read) for the CPU. Its processes are stopped or gone by now (collect).
      .then(() => sleep(RELEASE_DELAY_MS))
      .then(() => proc.dispose())
      .catch(() => {})
      .finally(() => this.live.delete(proc));
    this.live.set(proc, released);
    return result;
  }

  releaseOf(proc: SandboxedProcess): Promise<unknown> | undefined {
    return this.live.get(proc);
  }

  /**
   * With the pool empty (concurrent runs took it), a driver forked now from the zygote still
   * beats a cold start; undefined where none can be forked (the run then goes cold).
   */
  async forkWarm(kind: InterpreterKind): Promise<WarmProcess | undefined> {
    // The egress allowlist's forwarder runs before the driver: nothing a zygote could fork.
    const { config } = this.deps;
    if (!WARM_DRIVERS[kind].forkable || config.pool.size === 0 || config.network === 'allowlist')
      return undefined;
    // Code mode's Node driver starts with its helper imported: none a zygote forks.
    if (kind === 'node' && this.deps.codeMode) return undefined;
    // A backend that never forks drivers: no workspace made and removed again on the run's path.
    if (!(await this.deps.backends.get()).forksDrivers?.(kind)) return undefined;
    try {
      return await startWarm(this, kind, 'only');
    } catch (error) {
      if (error instanceof NotForkableError) return undefined;
      throw error;
    }
  }
}
