import { access, mkdir, rm, rmdir, symlink, unlink, writeFile } from 'node:fs/promises';
import { constants } from 'node:os';
import { join } from 'node:path';
import type { Config } from '../config/index.js';
import { InvalidInputError } from '../errors/index.js';
import type { LogWriter } from '../logs/index.js';
import { sandboxEnv } from '../policy/index.js';
import { CodeSyntaxError, type Interpreters, RUNTIMES, type Runtime } from '../runtimes/index.js';
import type { BackendRegistry, LimitKind, SandboxBackend, SandboxedProcess } from '../sandbox/index.js';
import { newId } from '../util/index.js';
import { diffSnapshots, snapshotDir } from './artifacts.js';
import { drain, terminate } from './kill.js';
import { OutputCollector } from './output.js';
import type { ExecutionRequest, ExecutionResult, OutputStream, RunOptions } from './types.js';

export const SCRIPT_BASENAME = '_codexec_script';

export interface EngineDeps {
  readonly config: Config;
  readonly backends: BackendRegistry;
  readonly interpreters: Interpreters;
  readonly logs: LogWriter;
  readonly hostEnv?: NodeJS.ProcessEnv;
}

/** Runs one execution end to end: workspace, script file, spawn, collect, artifacts, log. */
export class Engine {
  /** Every process started and not yet reaped: its owner kills it on shutdown. */
  private readonly live = new Set<SandboxedProcess>();

  constructor(private readonly deps: EngineDeps) {}

  /** Kill every running execution and wait for them to be reaped. */
  async shutdown(): Promise<void> {
    const procs = [...this.live];
    for (const proc of procs) proc.kill('SIGKILL');
    await Promise.all(procs.map((proc) => proc.exited));
  }

  async run(request: ExecutionRequest, options: RunOptions = {}): Promise<ExecutionResult> {
    const { config } = this.deps;
    const bytes = Buffer.byteLength(request.code, 'utf8');
    if (bytes > config.maxCodeBytes) {
      throw new InvalidInputError(
        `code is ${bytes} bytes; the limit is ${config.maxCodeBytes} (CODEXEC_MAX_CODE_BYTES)`,
      );
    }
    const runtime = RUNTIMES[request.language];
    const [backend, interpreter] = await Promise.all([
      this.deps.backends.get(),
      this.deps.interpreters.get(runtime.interpreter),
    ]);
    const id = newId('exec');
    const execDir = join(config.sandboxDir, id);
    const cwd = request.workingDir ?? execDir;
    const script = `${SCRIPT_BASENAME}.${runtime.extension}`;
    await mkdir(execDir, { recursive: true, mode: 0o700 });
    try {
      const exclude = cwd === execDir ? new Set([script, 'node_modules']) : undefined;
      const before = await snapshotDir(cwd, { exclude });
      const started = Date.now();
      const outcome = await this.spawnAndCollect(
        backend,
        runtime,
        interpreter,
        request,
        execDir,
        cwd,
        script,
        options,
      );
      const duration_ms = Date.now() - started;
      await rm(join(execDir, script), { force: true });
      await unlink(join(execDir, 'node_modules')).catch(() => {});
      const diff = diffSnapshots(before, await snapshotDir(cwd, { exclude }));
      const result: ExecutionResult = {
        success: outcome.exit_code === 0 && !outcome.timed_out && !outcome.cancelled,
        execution_id: id,
        language: request.language,
        ...outcome,
        duration_ms,
        artifacts: [...diff.created, ...diff.modified],
        artifacts_deleted: diff.deleted,
        working_dir: cwd,
        sandbox_mode: backend.mode,
      };
      await this.log(request, result, diff);
      return result;
    } finally {
      // Keep the workspace when the code left files in it; the agent may want them.
      await rmdir(execDir).catch(() => {});
      if (cwd !== execDir) await rm(execDir, { recursive: true, force: true });
    }
  }

  private async spawnAndCollect(
    backend: SandboxBackend,
    runtime: Runtime,
    interpreter: string,
    request: ExecutionRequest,
    execDir: string,
    cwd: string,
    script: string,
    options: RunOptions,
  ) {
    const { config } = this.deps;
    const stdout = new OutputCollector(config.output);
    const stderr = new OutputCollector(config.output);
    let prepared: string;
    try {
      prepared = runtime.prepare(request.code);
    } catch (error) {
      if (!(error instanceof CodeSyntaxError)) throw error;
      stderr.push(Buffer.from(`${error.message}\n`));
      return { ...collected(stdout, stderr), exit_code: 1, timed_out: false, cancelled: false };
    }
    const scriptPath = join(execDir, script);
    await writeFile(scriptPath, prepared, { mode: 0o600 });
    const packages = await globalPackages(config.envsDir, runtime, execDir);
    const extraEnv: Record<string, string> = { ...runtime.env, ...packages.env };
    // The script lives outside a custom working dir; keep that dir importable as `python -c` would.
    if (runtime.interpreter === 'python' && cwd !== execDir) {
      extraEnv.PYTHONPATH = [cwd, extraEnv.PYTHONPATH].filter(Boolean).join(':');
    }
    const proc = backend.spawn({
      argv: runtime.argv(interpreter, scriptPath, request.args ?? []),
      cwd,
      env: sandboxEnv(this.deps.hostEnv ?? process.env, extraEnv),
      writablePaths: cwd === execDir ? [execDir] : [execDir, cwd],
      readablePaths: [scriptPath, ...packages.readable],
      // CPU seconds per process as a backstop behind the wall clock (the namespace backend's RLIMIT_CPU).
      limits: { ...config.limits, cpuSeconds: Math.ceil(runTimeoutMs(request, config) / 1000) + 1 },
      network: config.network,
      stdin: 'ignore',
    });
    this.live.add(proc);
    const forward = (name: OutputStream, collector: OutputCollector) => (chunk: Buffer) => {
      const text = collector.push(chunk);
      if (text) options.onOutput?.(name, text);
    };
    proc.stdout.on('data', forward('stdout', stdout));
    proc.stderr.on('data', forward('stderr', stderr));

    let timed_out = false;
    let cancelled = false;
    let stopping: Promise<void> | undefined;
    const stop = () => {
      stopping ??= terminate(proc, config.killGraceMs);
    };
    const timeoutMs = runTimeoutMs(request, config);
    const timer = setTimeout(() => {
      timed_out = true;
      stop();
    }, timeoutMs);
    const onAbort = () => {
      cancelled = true;
      stop();
    };
    if (options.signal?.aborted) onAbort();
    options.signal?.addEventListener('abort', onAbort, { once: true });
    try {
      const exit = await proc.exited;
      // The run is over when its leader exits: nothing it started may outlive it.
      proc.kill('SIGKILL');
      await stopping;
      await drain(proc, 500);
      if (exit.spawnError)
        stderr.push(Buffer.from(`codexec: could not start ${interpreter}: ${exit.spawnError.message}\n`));
      const stoppedEarly = timed_out || cancelled;
      const exit_code = stoppedEarly ? null : (exit.code ?? signalExitCode(exit.signal));
      if (exit.limit) stderr.push(Buffer.from(`\n[codexec: ${limitNote(exit.limit, config)}]\n`));
      if (timed_out)
        stderr.push(Buffer.from(`\n[codexec: timed out after ${timeoutMs} ms; process killed]\n`));
      return {
        ...collected(stdout, stderr),
        exit_code,
        timed_out,
        cancelled,
        ...(exit.limit && { limit: exit.limit }),
      };
    } finally {
      clearTimeout(timer);
      options.signal?.removeEventListener('abort', onAbort);
      this.live.delete(proc);
      await proc.dispose();
    }
  }

  private async log(
    request: ExecutionRequest,
    result: ExecutionResult,
    diff: ReturnType<typeof diffSnapshots>,
  ) {
    await this.deps.logs.appendExecution({
      type: 'execution',
      execution_id: result.execution_id,
      session_id: null,
      language: result.language,
      code: request.code,
      stdin: null,
      stdout: result.stdout,
      stderr: result.stderr,
      exit_code: result.exit_code,
      timed_out: result.timed_out,
      cancelled: result.cancelled,
      duration_ms: result.duration_ms,
      memory_peak_mb: null,
      sandbox_mode: result.sandbox_mode,
      working_dir: result.working_dir,
      artifacts: diff,
      executed_at: new Date(Date.now() - result.duration_ms).toISOString(),
    });
  }
}

/**
 * Make the global package environment (install_package without a session) visible to a run:
 * PYTHONPATH for Python; for Node a `node_modules` link beside the script, which both `import`
 * and `require` resolve, plus NODE_PATH.
 */
async function globalPackages(
  envsDir: string,
  runtime: Runtime,
  execDir: string,
): Promise<{ env: Record<string, string>; readable: string[] }> {
  if (runtime.interpreter === 'python') {
    const dir = join(envsDir, 'python');
    return (await exists(dir)) ? { env: { PYTHONPATH: dir }, readable: [dir] } : { env: {}, readable: [] };
  }
  if (runtime.interpreter === 'node') {
    const dir = join(envsDir, 'node', 'node_modules');
    if (!(await exists(dir))) return { env: {}, readable: [] };
    await symlink(dir, join(execDir, 'node_modules'), 'dir').catch(() => {});
    return { env: { NODE_PATH: dir }, readable: [dir] };
  }
  return { env: {}, readable: [] };
}

const exists = (path: string) =>
  access(path).then(
    () => true,
    () => false,
  );

function collected(stdout: OutputCollector, stderr: OutputCollector) {
  const out = stdout.finish();
  const err = stderr.finish();
  return { stdout: out.text, stderr: err.text, truncated: out.truncated || err.truncated };
}

function runTimeoutMs(request: ExecutionRequest, config: Config): number {
  return Math.min(request.timeoutMs ?? config.defaultTimeoutMs, config.maxTimeoutMs);
}

function limitNote(limit: LimitKind, config: Config): string {
  switch (limit) {
    case 'memory':
      return `memory limit reached (CODEXEC_MEMORY_MB=${config.limits.memoryMb}); process killed`;
    case 'processes':
      return `process limit reached (CODEXEC_MAX_PROCS=${config.limits.maxProcs}); new processes were refused`;
    case 'cpu':
      return 'CPU time limit reached; process killed';
    case 'file_size':
      return `file size limit reached (CODEXEC_MAX_FILE_MB=${config.limits.maxFileMb}); write refused`;
  }
}

function signalExitCode(signal: NodeJS.Signals | null): number | null {
  if (signal === null) return null;
  return 128 + (constants.signals[signal] ?? 0);
}
