// The engine: one execution end to end — workspace, a warm or cold sandboxed process (with code
// mode's channel and the egress allowlist's lane), bounded output, timeouts, artifacts, pictures,
// log entry, release — and the warm pool it draws from. Over 400 lines: run() is one sequence
// whose steps share its locals (what was started must be released on every path); its pieces
// (spec, collect, output, artifacts, images, drivers, outcomes) live in files of their own.
import { randomUUID } from 'node:crypto';
import { closeSync, mkdirSync, unlinkSync, writeFileSync } from 'node:fs';
import { rm, rmdir, unlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  type Channel,
  CODE_MODE_FILES,
  channelEnv,
  codeModeArgv,
  NODE_IMPORT,
  openChannel,
  SOCKET_NAME,
} from '../codemode/index.js';
import type { Config } from '../config/index.js';
import type { DiskQuota } from '../disk/index.js';
import {
  CONNECTIONS,
  callRules,
  deniedOf,
  EgressRecord,
  type Lane,
  loggedConnection,
  type OpenedLane,
  PROXY_SOCKET,
} from '../egress/index.js';
import { InvalidInputError } from '../errors/index.js';
import type { LogWriter } from '../logs/index.js';
import { type SavedOutputs, savedBytes } from '../outputs/index.js';
import type { SecretsFilter } from '../policy/index.js';
import { WarmPool, WarmProcess } from '../pool/index.js';
import { CodeSyntaxError, type InterpreterKind, type Interpreters, RUNTIMES } from '../runtimes/index.js';
import {
  type BackendRegistry,
  countCpu,
  NotForkableError,
  type SandboxBackend,
  type SandboxedProcess,
  type SandboxSpec,
} from '../sandbox/index.js';
import { chargeCpu, currentPrincipal, holdsOnly, LOCAL_PRINCIPAL, newId, quietly } from '../util/index.js';
import { type ArtifactDiff, diffSnapshots, type Snapshot, snapshotDir } from './artifacts.js';
import { type Collected, collect } from './collect.js';
import { RunDisk } from './disk.js';
import { driverPath, openScriptFile, SCRIPT_BASENAME, WARM_DRIVERS } from './drivers.js';
import { collectImages, FIGURES_DIR } from './images.js';
import { listArtifacts } from './listing.js';
import { coldMark, executionEntry, syntaxFailure, toolCallsOf } from './outcomes.js';
import { type LaneOptions, openSandboxLane } from './sandbox-spec.js';
import { buildRunSpec, namedLimits, warmFits } from './spec.js';
import type { ExecutionRequest, ExecutionResult, RunOptions } from './types.js';

/** How long after a run its sandbox is released (killed, cgroup emptied), the result being out. */
const RELEASE_DELAY_MS = 5;
/** How long a warm start may wait for a driver to fork before it starts one cold. */
const FORK_WAIT_MS = 1000;
/** As long for a pre-forked launcher: a direct start waits for its cgroup move all the same. */
const LAUNCHER_WAIT_MS = 1000;

export interface EngineDeps {
  readonly config: Config;
  readonly backends: BackendRegistry;
  readonly interpreters: Interpreters;
  readonly logs: LogWriter;
  readonly hostEnv?: NodeJS.ProcessEnv;
  /** Masks secrets in run output before results, progress and logs (absent: redaction off). */
  readonly secrets?: SecretsFilter | undefined;
  /** The disk bounds, shared with sessions (a principal's quota spans both). */
  readonly disk: DiskQuota;
  /**
   * Code mode for every run (downstream MCP servers are configured): warm python and node
   * processes wait with the helpers defined (they connect on first use) and their channel bound.
   */
  readonly codeMode?: boolean | undefined;
  /** Keeps the whole output of a run the result truncates (absent: none kept). */
  readonly outputs?: SavedOutputs | undefined;
}

/**
 * Runs one execution end to end: workspace, script file, sandboxed process (a warm one when the
 * pool has it), bounded output, timeout cascade, artifacts, log entry.
 */
export class Engine {
  /** Every process started and not yet released, with the promise of its release. */
  private readonly live = new Map<SandboxedProcess, Promise<unknown>>();
  private readonly pending = new Set<Promise<unknown>>();
  private readonly pool: WarmPool;

  constructor(private readonly deps: EngineDeps) {
    this.pool = new WarmPool({
      size: deps.config.pool.size,
      idleMs: deps.config.pool.idleMs,
      memoryMb: deps.config.pool.memoryMb,
      start: (kind) => this.startWarm(kind),
      sandboxDir: deps.config.sandboxDir,
    });
  }

  /** Kill every running execution and warm process, and wait until each is reaped and released. */
  async shutdown(): Promise<void> {
    for (const proc of this.live.keys()) proc.kill('SIGKILL');
    await Promise.allSettled([this.pool.shutdown(), ...this.live.values()]);
    await Promise.allSettled([...this.pending, this.deps.backends.shutdown()]);
  }

  /** The warm pool's target size and how many processes of each kind wait now. */
  poolStatus(): { readonly size: number; readonly ready: Record<string, number> } {
    return { size: this.deps.config.pool.size, ready: this.pool.readyCounts() };
  }

  /** Discard warm processes (they were started before the package environment changed). */
  refreshPool(): Promise<void> {
    return this.pool.flush();
  }

  async run(request: ExecutionRequest, options: RunOptions = {}): Promise<ExecutionResult> {
    const { config } = this.deps;
    const bytes = Buffer.byteLength(request.code, 'utf8');
    if (bytes > config.maxCodeBytes) {
      throw new InvalidInputError(
        `code is ${bytes} bytes; the limit is ${config.maxCodeBytes} (CODEXEC_MAX_CODE_BYTES)`,
      );
    }
    const principal = currentPrincipal();
    this.deps.disk.assertRoom(principal);
    const runtime = RUNTIMES[request.language];
    const command = request.form === 'command';
    if (command && (request.language !== 'bash' || !request.workingDir))
      throw new TypeError("a 'command' run is bash in a workingDir");
    const [backend, interpreter] = await Promise.all([
      this.deps.backends.get(),
      this.deps.interpreters.get(runtime.interpreter),
    ]);
    let prepared: string | CodeSyntaxError;
    try {
      prepared = runtime.prepare(request.code);
    } catch (error) {
      if (!(error instanceof CodeSyntaxError)) throw error;
      prepared = error;
    }
    if (request.bridge && runtime.interpreter === 'bash') {
      throw new InvalidInputError('allowed_tools (code mode) is for python, node and typescript code');
    }
    // The egress allowlist: the connections this run makes through its sandbox's lane.
    const egress =
      config.network === 'allowlist' || request.allowedDomains
        ? new EgressRecord(callRules(config, request.allowedDomains), request.askEgress)
        : undefined;
    // Code mode runs warm where the pool's processes have its helpers (codeMode), else cold.
    const warm =
      request.workingDir ||
      command ||
      (request.bridge && !this.deps.codeMode) ||
      typeof prepared !== 'string' ||
      !warmFits(config, runtime.interpreter, principal)
        ? undefined
        : (this.pool.take(runtime.interpreter) ?? (await this.forkWarm(runtime.interpreter)));
    const id = warm?.id ?? newId('exec');
    const execDir = warm?.execDir ?? join(config.sandboxDir, id);
    // Where the program runs; its files are reached through `root`, the held directory itself.
    const cwd = request.workingDir?.path ?? execDir;
    const root = request.workingDir ?? execDir;
    const script = `${SCRIPT_BASENAME}.${runtime.extension}`;
    const scriptPath = join(execDir, script);
    // Single calls on a small directory are made on this thread: µs, where the pool costs ~0.3 ms.
    if (!warm) mkdirSync(execDir, { recursive: true, mode: 0o700 });
    let launched = false;
    let proc: SandboxedProcess | undefined;
    let keepsFiles = cwd !== execDir;
    let tidied: Promise<unknown> = Promise.resolve();
    // A warm process's channel and lane are bound already: the run attaches to them.
    const held = warm?.companion as Held | undefined;
    let channel = held?.channel;
    let lane: Lane | undefined = held?.lane;
    lane?.use(egress);
    const disk = new RunDisk(this.deps.disk, execDir, principal);
    try {
      const exclude =
        cwd === execDir ? new Set([script, 'node_modules', SOCKET_NAME, PROXY_SOCKET]) : undefined;
      // A fresh workspace is empty (a warm one holds only the program's file, left out by name).
      const before: Snapshot = cwd === execDir ? new Map() : await snapshotDir(root, { exclude });
      const started = Date.now();
      let outcome: Collected;
      if (typeof prepared === 'string') {
        // Readable by the sandbox's uid whoever owns the workspace now (a warm one is already lent).
        // A small script is written synchronously: µs, where the thread pool costs ~0.5 ms.
        if (command) {
          // bash -c: the command line is an argument, no file
        } else if (prepared.length <= 64 * 1024) {
          // A warm workspace has the file already, opened: one write (creating it costs ~0.3 ms).
          if (!warm?.writeScript(scriptPath, prepared)) writeFileSync(scriptPath, prepared, { mode: 0o644 });
        } else {
          warm?.closeScript();
          await writeFile(scriptPath, prepared, { mode: 0o644 });
        }
        if (request.bridge && channel) channel.attach(request.bridge, request.sampler);
        else if (request.bridge) channel = await openChannel(execDir, request.bridge, request.sampler);
        // Every warm driver writes its end mark after the program's output; a cold run's sandbox
        // does where it can (SandboxSpec.endMark), else the run ends with its streams.
        const endMark = warm
          ? `\n[codexec-end ${randomUUID()}]` // from a cache of entropy: no call into OpenSSL per run
          : coldMark();
        const launch =
          warm &&
          (() => {
            launched = true;
            return warm.launch(scriptPath, request.args ?? [], endMark);
          });
        let opened: OpenedLane | undefined;
        if (!warm && egress) {
          opened = await openSandboxLane({ ...this.laneOf(backend, execDir), user: egress });
          lane = opened.lane;
        }
        const running =
          warm?.proc ??
          (await this.spawnCold(backend, {
            ...(await buildRunSpec({
              config,
              hostEnv: this.hostEnv,
              kind: runtime.interpreter,
              runtimeEnv: { ...runtime.env, ...request.env, ...channelEnv(channel), ...opened?.env },
              egress: opened?.endpoint,
              argv: command
                ? [interpreter, '-c', prepared]
                : channel
                  ? codeModeArgv(runtime.interpreter, interpreter, scriptPath, request.args ?? [])
                  : runtime.argv(interpreter, scriptPath, request.args ?? []),
              execDir,
              cwd,
              held: request.workingDir,
              files: command ? [] : channel ? [scriptPath, ...CODE_MODE_FILES] : [scriptPath],
              pathPrefix: request.pathPrefix,
              timeoutMs: this.timeoutMs(request),
              capabilities: backend.capabilities,
              command,
            })),
            endMark,
          }));
        proc = running;
        // From now on (a warm process's start-up, a reused cgroup's earlier runs are not this run's).
        const used = countCpu(running);
        disk.start(running);
        // A cold run's sandbox reports its end where it can: else it ends with its streams.
        const reported = !warm && running.reported;
        const save = this.deps.outputs?.streams(principal, id);
        try {
          outcome = await this.track(running, () =>
            collect(running, {
              timeoutMs: this.timeoutMs(request),
              killGraceMs: config.killGraceMs,
              output: config.output,
              limits: namedLimits(config, backend.capabilities),
              signal: options.signal,
              onOutput: options.onOutput,
              secrets: this.deps.secrets,
              save,
              ...(launch && { launch }),
              ...(reported && { launch: () => reported }),
              ...((warm || reported) && { endMark }),
            }),
          );
        } finally {
          // Its processes are stopped or gone (collect), their cgroup not yet released: CODEXEC_QUOTAS.
          chargeCpu(used());
        }
      } else {
        outcome = syntaxFailure(prepared, this.deps.secrets);
      }
      const duration_ms = Date.now() - started;
      const saved = outcome.output_saved;
      if (saved && this.deps.outputs) this.background(this.deps.outputs.trim(principal, savedBytes(saved)));
      // The script file and the package link are left out of the snapshot: remove them meanwhile.
      quietly(() => unlinkSync(scriptPath));
      if (runtime.interpreter === 'node') tidied = unlink(join(execDir, 'node_modules')).catch(() => {});
      const untouched = exclude !== undefined && holdsOnly(cwd, exclude);
      const after: Snapshot = untouched
        ? new Map()
        : await snapshotDir(root, { exclude, ownWorkspace: cwd === execDir });
      const diff = diffSnapshots(before, after);
      outcome = disk.settle(outcome, cwd === execDir ? after : undefined);
      keepsFiles ||= diff.created.length > 0 || diff.modified.length > 0;
      const listed = listArtifacts(diff, config.artifacts, this.deps.secrets);
      const pictures = await collectImages({
        workspace: runtime.interpreter === 'python' ? execDir : undefined,
        workingDir: root,
        artifacts: listed.plain,
        maxBytes: config.maxImageBytes,
      });
      const connections = egress?.since() ?? [];
      const denied = deniedOf(connections);
      const result: ExecutionResult = {
        success: outcome.exit_code === 0 && !outcome.timed_out && !outcome.cancelled,
        execution_id: id,
        language: request.language,
        ...outcome,
        duration_ms,
        artifacts: listed.artifacts,
        artifacts_deleted: listed.deleted,
        ...(listed.omitted && { artifacts_omitted: listed.omitted }),
        working_dir: cwd,
        sandbox_mode: backend.mode,
        warm: warm !== undefined,
        ...toolCallsOf(request),
        ...pictures,
        ...(denied && { network_denied: denied }),
      };
      if (egress) result[CONNECTIONS] = connections.map(loggedConnection);
      await this.log(request, result, listed.logged);
      return result;
    } finally {
      // A warm process taken but never given its job (the run failed before) must not linger.
      if (warm && !launched) await warm.discard();
      // The replacement starts once this result is on its way (without a ready launcher, starting
      // one forks the server, which blocks the event loop).
      if (!request.workingDir) setImmediate(() => this.pool.replenish(runtime.interpreter));
      const release = proc && this.live.get(proc);
      const cleanup = (async () => {
        await tidied;
        if (!keepsFiles) await release; // the sandbox is gone: nothing can write there any more
        // The sockets (no artifacts: left out by name) go with the workspace, once no code can use
        // them: their unlink and close would otherwise land before the result is written (~0.08 ms).
        await Promise.all([channel?.close(), lane?.close()]);
        // matplotlib's config and cache, figures not collected (the run failed before)
        if (runtime.interpreter === 'python')
          await rm(join(execDir, FIGURES_DIR), { recursive: true, force: true }).catch(() => {});
        // Keep the workspace when the code left files in it; the agent may want them. Off this
        // thread: an rmdir here took ~0.7 ms of the event loop per run at c=8 (profiled).
        await rmdir(execDir).catch(() => {});
        if (cwd !== execDir) await rm(execDir, { recursive: true, force: true });
      })();
      // Files the run leaves behind (in its workspace or the caller's working_dir) are handed back
      // (ownership) before the caller sees them, so the sandbox is released now, not after the
      // result (dispose() is idempotent); an empty workspace goes in the background.
      this.background(disk.end(keepsFiles && cwd === execDir));
      if (keepsFiles) await Promise.all([proc?.dispose(), cleanup]);
      else this.background(cleanup);
    }
  }

  /** A cold run's sandbox, started by a launcher forked ahead where one comes in time (not by the server). */
  private async spawnCold(backend: SandboxBackend, spec: SandboxSpec): Promise<SandboxedProcess> {
    await backend.reserveLauncher?.(spec, LAUNCHER_WAIT_MS);
    return backend.spawn(spec);
  }

  /** Where a sandbox of `backend` with workspace `execDir` gets its egress lane. */
  private laneOf(backend: SandboxBackend, execDir: string): LaneOptions {
    return {
      egress: backend.capabilities.egress,
      workspace: execDir,
      python: () => this.deps.interpreters.get('python'),
    };
  }

  /** Work that need not delay a result; shutdown waits for it. */
  private background(work: Promise<unknown>): void {
    const done = work.catch(() => {}).finally(() => this.pending.delete(done));
    this.pending.add(done);
  }

  private get hostEnv(): NodeJS.ProcessEnv {
    return this.deps.hostEnv ?? process.env;
  }

  private timeoutMs(request: ExecutionRequest): number {
    const { config } = this.deps;
    return Math.min(request.timeoutMs ?? config.defaultTimeoutMs, config.maxTimeoutMs);
  }

  /**
   * Run `work` on `proc`, then release the process (reaped, cgroup removed, workspace given back)
   * in the background: `live` holds the release until it is done, for shutdown and for runs that
   * must wait for it.
   */
  private track<T>(proc: SandboxedProcess, work: () => Promise<T>): Promise<T> {
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

  /**
   * With the pool empty (concurrent runs took it), a driver forked now from the zygote still
   * beats a cold start; undefined where none can be forked (the run then goes cold).
   */
  private async forkWarm(kind: InterpreterKind): Promise<WarmProcess | undefined> {
    // The egress allowlist's forwarder runs before the driver: nothing a zygote could fork.
    const { config } = this.deps;
    if (!WARM_DRIVERS[kind].forkable || config.pool.size === 0 || config.network === 'allowlist')
      return undefined;
    // A backend that never forks drivers: no workspace made and removed again on the run's path.
    if (!(await this.deps.backends.get()).forksDrivers?.()) return undefined;
    try {
      return await this.startWarm(kind, 'only');
    } catch (error) {
      if (error instanceof NotForkableError) return undefined;
      throw error;
    }
  }

  /** Start one sandboxed interpreter in a fresh workspace, blocked on its control channel. */
  private async startWarm(kind: InterpreterKind, zygote: 'prefer' | 'only' = 'prefer'): Promise<WarmProcess> {
    const { config } = this.deps;
    const [backend, interpreter] = await Promise.all([
      this.deps.backends.get(),
      this.deps.interpreters.get(kind),
    ]);
    const id = newId('exec');
    const execDir = join(config.sandboxDir, id);
    mkdirSync(execDir, { recursive: true, mode: 0o700 });
    const driver = driverPath(WARM_DRIVERS[kind].file);
    // Code mode: the helpers are defined as the driver warms up and connect on first use; the
    // channel is bound now, off any run's path, and attached to the run that takes the process.
    const channel = this.deps.codeMode && kind !== 'bash' ? await openChannel(execDir) : undefined;
    // The egress allowlist: the lane waits with nobody's rules (all refused) until a run takes it.
    const opened =
      config.network === 'allowlist'
        ? await openSandboxLane(this.laneOf(backend, execDir)).catch(async (error: unknown) => {
            await channel?.close();
            await rm(execDir, { recursive: true, force: true });
            throw error;
          })
        : undefined;
    const spec = await buildRunSpec({
      config,
      principal: LOCAL_PRINCIPAL,
      hostEnv: this.hostEnv,
      kind,
      runtimeEnv: {
        ...(kind === 'python' ? RUNTIMES.python.env : {}),
        ...channelEnv(channel),
        ...opened?.env,
      },
      egress: opened?.endpoint,
      argv: channel && kind === 'node' ? [interpreter, ...NODE_IMPORT, driver] : [interpreter, driver],
      execDir,
      cwd: execDir,
      files: [driver, ...WARM_DRIVERS[kind].imports.map(driverPath), ...(channel ? CODE_MODE_FILES : [])],
      timeoutMs: config.maxTimeoutMs,
      control: true,
      capabilities: backend.capabilities,
    });
    const launch = WARM_DRIVERS[kind].forkable && !opened ? { ...spec, zygote } : spec;
    const script = openScriptFile(execDir, kind);
    try {
      // Under load every ready fork can be taken: waiting for the next costs less than a cold start.
      if (launch.zygote && backend.forksDrivers?.()) await backend.reserveFork?.(launch, FORK_WAIT_MS);
      else await backend.reserveLauncher?.(launch, LAUNCHER_WAIT_MS);
      const held = channel || opened ? new Held(channel, opened?.lane) : undefined;
      return new WarmProcess(id, execDir, backend.spawn(launch), script, held);
    } catch (error) {
      closeSync(script.fd);
      await Promise.all([channel?.close(), opened?.lane.close()]);
      await rm(execDir, { recursive: true, force: true });
      throw error;
    }
  }

  private async log(request: ExecutionRequest, result: ExecutionResult, diff: ArtifactDiff) {
    await this.deps.logs.appendExecution(executionEntry(request, result, diff));
  }
}

/** What a warm process holds beside its sandbox: code mode's channel, the egress lane. */
class Held {
  constructor(
    readonly channel: Channel | undefined,
    readonly lane: Lane | undefined,
  ) {}

  async close(): Promise<void> {
    await Promise.all([this.channel?.close(), this.lane?.close()]);
  }
}
