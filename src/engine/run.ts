// One run's stages, in order: admit (checks, backend, prepared code, egress rules), place (a warm
// process or a fresh workspace), execute (script, code mode's channel, lane, spawn, collect),
// finish (artifacts, pictures, the result and its log line) and release (on every path: what was
// started is let go, the workspace kept only where the code left files).
import { randomUUID } from 'node:crypto';
import { mkdirSync, unlinkSync, writeFileSync } from 'node:fs';
import { rm, rmdir, unlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { type Channel, CODE_MODE_FILES, channelEnv, codeModeArgv, openChannel } from '../codemode/index.js';
import {
  CONNECTIONS,
  callRules,
  deniedOf,
  EgressRecord,
  type Lane,
  loggedConnection,
  type OpenedLane,
} from '../egress/index.js';
import { InvalidInputError } from '../errors/index.js';
import { savedBytes } from '../outputs/index.js';
import type { WarmPool, WarmProcess } from '../pool/index.js';
import { CodeSyntaxError, type InterpreterKind, RUNTIMES, type Runtime } from '../runtimes/index.js';
import { countCpu, type SandboxBackend, type SandboxedProcess, type SandboxSpec } from '../sandbox/index.js';
import { chargeCpu, currentPrincipal, type HeldDir, holdsOnly, newId, quietly } from '../util/index.js';
import type { Snapshot } from './artifacts.js';
import { diffSnapshots, snapshotDir } from './artifacts.js';
import { type Collected, collect } from './collect.js';
import type { EngineDeps } from './deps.js';
import { RunDisk } from './disk.js';
import { SCRIPT_BASENAME } from './drivers.js';
import { collectImages, FIGURES_DIR } from './images.js';
import { listArtifacts } from './listing.js';
import { coldMark, executionEntry, syntaxFailure, toolCallsOf } from './outcomes.js';
import { type LaneOptions, openSandboxLane } from './sandbox-spec.js';
import { buildRunSpec, namedLimits, warmFits } from './spec.js';
import type { ExecutionRequest, ExecutionResult, RunOptions } from './types.js';

/** What a run's stages ask of the engine that runs them. */
export interface RunHost {
  readonly deps: EngineDeps;
  readonly pool: WarmPool;
  readonly hostEnv: NodeJS.ProcessEnv;
  timeoutMs(request: ExecutionRequest): number;
  forkWarm(kind: InterpreterKind): Promise<WarmProcess | undefined>;
  spawnCold(backend: SandboxBackend, spec: SandboxSpec): Promise<SandboxedProcess>;
  track<T>(proc: SandboxedProcess, work: () => Promise<T>): Promise<T>;
  /** The release of a process track() started, while it is pending. */
  releaseOf(proc: SandboxedProcess): Promise<unknown> | undefined;
  background(work: Promise<unknown>): void;
  laneOf(backend: SandboxBackend, execDir: string): LaneOptions;
}

/** A warm process's companions, bound already: the run attaches to them. */
export interface Companions {
  readonly channel: Channel | undefined;
  readonly lane: Lane | undefined;
}

export interface Admitted {
  readonly principal: string;
  readonly runtime: Runtime;
  readonly command: boolean;
  readonly backend: SandboxBackend;
  readonly interpreter: string;
  readonly prepared: string | CodeSyntaxError;
  /** The egress allowlist: the connections this run makes through its sandbox's lane. */
  readonly egress: EgressRecord | undefined;
}

/** A run placed: where it works, and what it started so far (released on every path). */
export interface RunState extends Admitted {
  readonly warm: WarmProcess | undefined;
  readonly id: string;
  readonly execDir: string;
  /** Where the program runs; its files are reached through `root`, the held directory itself. */
  readonly cwd: string;
  readonly root: string | HeldDir;
  readonly script: string;
  readonly scriptPath: string;
  readonly disk: RunDisk;
  launched: boolean;
  proc: SandboxedProcess | undefined;
  keepsFiles: boolean;
  tidied: Promise<unknown>;
  channel: Channel | undefined;
  lane: Lane | undefined;
}

/** The checks before anything starts, the backend and interpreter, the code prepared. */
export async function admit(host: RunHost, request: ExecutionRequest): Promise<Admitted> {
  const { config } = host.deps;
  const bytes = Buffer.byteLength(request.code, 'utf8');
  if (bytes > config.maxCodeBytes) {
    throw new InvalidInputError(
      `code is ${bytes} bytes; the limit is ${config.maxCodeBytes} (CODEXEC_MAX_CODE_BYTES)`,
    );
  }
  const principal = currentPrincipal();
  host.deps.disk.assertRoom(principal);
  const runtime = RUNTIMES[request.language];
  const command = request.form === 'command';
  if (command && (request.language !== 'bash' || !request.workingDir))
    throw new TypeError("a 'command' run is bash in a workingDir");
  const [backend, interpreter] = await Promise.all([
    host.deps.backends.get(),
    host.deps.interpreters.get(runtime.interpreter),
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
  const egress =
    config.network === 'allowlist' || request.allowedDomains
      ? new EgressRecord(callRules(config, request.allowedDomains), request.askEgress)
      : undefined;
  return { principal, runtime, command, backend, interpreter, prepared, egress };
}

/** A warm process where one fits (code mode where the pool's have its helpers), else a fresh workspace. */
export async function place(host: RunHost, request: ExecutionRequest, admitted: Admitted): Promise<RunState> {
  const { config, codeMode } = host.deps;
  const { runtime, command, prepared, principal } = admitted;
  const warm =
    request.workingDir ||
    command ||
    (request.bridge && !codeMode) ||
    typeof prepared !== 'string' ||
    !warmFits(config, runtime.interpreter, principal, host.deps.mounts)
      ? undefined
      : (host.pool.take(runtime.interpreter) ?? (await host.forkWarm(runtime.interpreter)));
  const id = warm?.id ?? newId('exec');
  const execDir = warm?.execDir ?? join(config.sandboxDir, id);
  const cwd = request.workingDir?.path ?? execDir;
  const script = `${SCRIPT_BASENAME}.${runtime.extension}`;
  // Single calls on a small directory are made on this thread: µs, where the pool costs ~0.3 ms.
  if (!warm) mkdirSync(execDir, { recursive: true, mode: 0o700 });
  const held = warm?.companion as Companions | undefined;
  held?.lane?.use(admitted.egress);
  return {
    ...admitted,
    warm,
    id,
    execDir,
    cwd,
    root: request.workingDir ?? execDir,
    script,
    scriptPath: join(execDir, script),
    disk: new RunDisk(host.deps.disk, execDir, principal),
    launched: false,
    proc: undefined,
    keepsFiles: cwd !== execDir,
    tidied: Promise.resolve(),
    channel: held?.channel,
    lane: held?.lane,
  };
}

/** Readable by the sandbox's uid whoever owns the workspace now (a warm one is already lent). */
function writeScript(run: RunState, prepared: string): Promise<void> | undefined {
  if (run.command) return undefined; // bash -c: the command line is an argument, no file
  // A small script is written synchronously: µs, where the thread pool costs ~0.5 ms. A warm
  // workspace has the file already, opened: one write (creating it costs ~0.3 ms).
  if (prepared.length <= 64 * 1024) {
    if (!run.warm?.writeScript(run.scriptPath, prepared))
      writeFileSync(run.scriptPath, prepared, { mode: 0o644 });
    return undefined;
  }
  run.warm?.closeScript();
  return writeFile(run.scriptPath, prepared, { mode: 0o644 });
}

/** The sandboxed process of a run: the warm one, or a cold one started now with its lane. */
async function launch(
  host: RunHost,
  run: RunState,
  request: ExecutionRequest,
  { prepared, endMark }: { prepared: string; endMark: string },
): Promise<SandboxedProcess> {
  if (run.warm) return run.warm.proc;
  let opened: OpenedLane | undefined;
  if (run.egress) {
    opened = await openSandboxLane({ ...host.laneOf(run.backend, run.execDir), user: run.egress });
    run.lane = opened.lane;
  }
  const { runtime, channel, interpreter, scriptPath } = run;
  const args = request.args ?? [];
  const spec = await buildRunSpec({
    config: host.deps.config,
    hostEnv: host.hostEnv,
    kind: runtime.interpreter,
    runtimeEnv: { ...runtime.env, ...request.env, ...channelEnv(channel), ...opened?.env },
    egress: opened?.endpoint,
    argv: run.command
      ? [interpreter, '-c', prepared]
      : channel
        ? codeModeArgv(runtime.interpreter, interpreter, scriptPath, args)
        : runtime.argv(interpreter, scriptPath, args),
    execDir: run.execDir,
    cwd: run.cwd,
    held: request.workingDir,
    files: run.command ? [] : [scriptPath, ...(channel ? CODE_MODE_FILES : []), ...runtime.files],
    pathPrefix: request.pathPrefix,
    timeoutMs: host.timeoutMs(request),
    capabilities: run.backend.capabilities,
    command: run.command,
    mounts: host.deps.mounts,
  });
  return host.spawnCold(run.backend, { ...spec, endMark });
}

/** The program run to its end: script, channel, lane, process, bounded output, timeouts. */
export async function execute(
  host: RunHost,
  run: RunState,
  request: ExecutionRequest,
  options: RunOptions,
): Promise<Collected> {
  const { config } = host.deps;
  const prepared = run.prepared as string;
  const writing = writeScript(run, prepared);
  if (writing) await writing;
  if (request.bridge && run.channel) run.channel.attach(request.bridge, request.sampler);
  else if (request.bridge) run.channel = await openChannel(run.execDir, request.bridge, request.sampler);
  // Every warm driver writes its end mark after the program's output; a cold run's sandbox does
  // where it can (SandboxSpec.endMark), else the run ends with its streams.
  const { warm } = run;
  const endMark = warm ? `\n[codexec-end ${randomUUID()}]` : coldMark(); // no call into OpenSSL per run
  const running = await launch(host, run, request, { prepared, endMark });
  run.proc = running;
  // From now on (a warm process's start-up, a reused cgroup's earlier runs are not this run's).
  const used = countCpu(running);
  run.disk.start(running);
  // A cold run's sandbox reports its end where it can: else it ends with its streams.
  const reported = !warm && running.reported;
  const start =
    warm &&
    (() => {
      run.launched = true;
      return warm.launch(run.scriptPath, request.args ?? [], endMark);
    });
  try {
    return await host.track(running, () =>
      collect(running, {
        timeoutMs: host.timeoutMs(request),
        killGraceMs: config.killGraceMs,
        output: config.output,
        limits: namedLimits(config, run.backend.capabilities),
        signal: options.signal,
        onOutput: options.onOutput,
        secrets: host.deps.secrets,
        save: host.deps.outputs?.streams(run.principal, run.id),
        ...(start && { launch: start }),
        ...(reported && { launch: () => reported }),
        ...((warm || reported) && { endMark }),
      }),
    );
  } finally {
    // Its processes are stopped or gone (collect), their cgroup not yet released: CODEXEC_QUOTAS.
    chargeCpu(used());
  }
}

/** Left out of a fresh workspace's snapshots by name: the program and what codexec put beside it. */
export function excluded(run: RunState, names: readonly string[]): Set<string> | undefined {
  return run.cwd === run.execDir ? new Set([run.script, ...names]) : undefined;
}

/** A fresh workspace is empty (a warm one holds only the program's file, left out by name). */
export function snapshotBefore(run: RunState, exclude: Set<string> | undefined): Promise<Snapshot> {
  return run.cwd === run.execDir ? Promise.resolve(new Map()) : snapshotDir(run.root, { exclude });
}

/** The result: output, files the code made, changed or deleted, pictures, connections; logged. */
export async function finish(
  host: RunHost,
  run: RunState,
  request: ExecutionRequest,
  collected: Collected,
  { before, exclude, started }: { before: Snapshot; exclude: Set<string> | undefined; started: number },
): Promise<ExecutionResult> {
  const { config, secrets, outputs } = host.deps;
  const { runtime, cwd, execDir, root } = run;
  const duration_ms = Date.now() - started;
  const saved = collected.output_saved;
  if (saved && outputs) host.background(outputs.trim(run.principal, savedBytes(saved)));
  // The script file and the package link are left out of the snapshot: remove them meanwhile.
  quietly(() => unlinkSync(run.scriptPath));
  if (runtime.interpreter === 'node') run.tidied = unlink(join(execDir, 'node_modules')).catch(() => {});
  const untouched = exclude !== undefined && holdsOnly(cwd, exclude);
  const after: Snapshot = untouched
    ? new Map()
    : await snapshotDir(root, { exclude, ownWorkspace: cwd === execDir });
  const diff = diffSnapshots(before, after);
  const outcome = run.disk.settle(collected, cwd === execDir ? after : undefined);
  run.keepsFiles ||= diff.created.length > 0 || diff.modified.length > 0;
  const listed = listArtifacts(diff, config.artifacts, secrets);
  const pictures = await collectImages({
    workspace: runtime.interpreter === 'python' ? execDir : undefined,
    workingDir: root,
    artifacts: listed.plain,
    maxBytes: config.maxImageBytes,
  });
  const connections = run.egress?.since() ?? [];
  const denied = deniedOf(connections);
  const result: ExecutionResult = {
    success: outcome.exit_code === 0 && !outcome.timed_out && !outcome.cancelled,
    execution_id: run.id,
    language: request.language,
    ...outcome,
    duration_ms,
    artifacts: listed.artifacts,
    artifacts_deleted: listed.deleted,
    ...(listed.omitted && { artifacts_omitted: listed.omitted }),
    working_dir: cwd,
    sandbox_mode: run.backend.mode,
    warm: run.warm !== undefined,
    ...toolCallsOf(request),
    ...pictures,
    ...(denied && { network_denied: denied }),
  };
  if (run.egress) result[CONNECTIONS] = connections.map(loggedConnection);
  await host.deps.logs.appendExecution(executionEntry(request, result, listed.logged));
  return result;
}

/** A run that never started its program: its syntax error as the outcome. */
export function unstarted(host: RunHost, run: RunState): Collected {
  return syntaxFailure(run.prepared as CodeSyntaxError, host.deps.secrets);
}

/** On every path: what the run started is let go; its workspace goes unless the code left files. */
export async function release(host: RunHost, run: RunState, request: ExecutionRequest): Promise<void> {
  const { warm, proc, execDir, cwd, runtime } = run;
  // A warm process taken but never given its job (the run failed before) must not linger.
  if (warm && !run.launched) await warm.discard();
  // The replacement starts once this result is on its way (without a ready launcher, starting one
  // forks the server, which blocks the event loop).
  if (!request.workingDir) setImmediate(() => host.pool.replenish(runtime.interpreter));
  const released = proc && host.releaseOf(proc);
  const cleanup = (async () => {
    await run.tidied;
    if (!run.keepsFiles) await released; // the sandbox is gone: nothing can write there any more
    // The sockets (no artifacts: left out by name) go with the workspace, once no code can use
    // them: their unlink and close would otherwise land before the result is written (~0.08 ms).
    await Promise.all([run.channel?.close(), run.lane?.close()]);
    // matplotlib's config and cache, figures not collected (the run failed before)
    if (runtime.interpreter === 'python')
      await rm(join(execDir, FIGURES_DIR), { recursive: true, force: true }).catch(() => {});
    // Keep the workspace when the code left files in it; the agent may want them. Off this
    // thread: an rmdir here took ~0.7 ms of the event loop per run at c=8 (profiled).
    await rmdir(execDir).catch(() => {});
    if (cwd !== execDir) await rm(execDir, { recursive: true, force: true });
  })();
  // Files the run leaves behind (in its workspace or the caller's working_dir) are handed back
  // (ownership) before the caller sees them, so the sandbox is released now, not after the result
  // (dispose() is idempotent); an empty workspace goes in the background.
  host.background(run.disk.end(run.keepsFiles && cwd === execDir));
  if (run.keepsFiles) await Promise.all([proc?.dispose(), cleanup]);
  else host.background(cleanup);
}
