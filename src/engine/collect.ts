import { constants } from 'node:os';
import type { OutputSaved, SavedStream } from '../outputs/index.js';
import type { SecretsFilter } from '../policy/index.js';
import type { Exit, LimitKind, SandboxedProcess } from '../sandbox/index.js';
import { drain, terminate, within } from './kill.js';
import { EndMarkFilter, OutputCollector, type OutputLimits } from './output.js';
import type { OutputStream } from './types.js';

/** The configured limits, named in the note when one is hit (spec.ts namedLimits). */
export interface NamedLimits {
  readonly memoryMb: number;
  readonly maxProcs: number;
  readonly maxFileMb: number;
  /** The setting that holds the memory limit, where not CODEXEC_MEMORY_MB (docker mode's). */
  readonly memorySetting?: string;
}

export interface CollectOptions {
  readonly timeoutMs: number;
  readonly killGraceMs: number;
  readonly output: OutputLimits;
  readonly limits?: NamedLimits;
  readonly signal?: AbortSignal | undefined;
  readonly onOutput?: ((stream: OutputStream, text: string) => void) | undefined;
  /**
   * Hands a warm driver its program, once its output and its report are listened to: the driver
   * wakes on this CPU and would otherwise wait for that setup. Resolves with the program's exit
   * status as the driver (or a cold run's sandbox: SandboxedProcess.reported) reports it, undefined
   * if it never does; the run then ends without waiting for the interpreter's teardown and the
   * sandbox's exit.
   */
  readonly launch?: () => Promise<number | undefined>;
  /**
   * The mark the warm driver (or a reporting sandbox) writes on stdout and stderr after the
   * program's output: taken out of the output, and once both are in the run need not wait for the
   * streams' end.
   */
  readonly endMark?: string;
  /** Masks secrets in both streams before they are collected or streamed (absent: redaction off). */
  readonly secrets?: SecretsFilter | undefined;
  /** Where each stream's whole output goes should it outgrow the cap (absent: saving off). */
  readonly save?: Readonly<Record<OutputStream, SavedStream>> | undefined;
}

export interface Collected {
  readonly stdout: string;
  readonly stderr: string;
  readonly truncated: boolean;
  /** null when stopped (timeout, cancel) or never started; 128+N after signal N. */
  readonly exit_code: number | null;
  readonly timed_out: boolean;
  readonly cancelled: boolean;
  readonly limit?: LimitKind;
  /** Where the whole output of a truncated stream is kept (present when any is). */
  readonly output_saved?: OutputSaved;
}

/**
 * Collect a started process to its end: bounded output, the wall-clock timeout and cancellation
 * with the SIGTERM → grace → SIGKILL cascade, and, once the leader exits, SIGKILL for anything it
 * left behind. Notes on stderr say why a run was stopped.
 */
export async function collect(proc: SandboxedProcess, options: CollectOptions): Promise<Collected> {
  const { stdout, stderr, filters, marked, allIn } = listen(proc, options);
  let timed_out = false;
  let cancelled = false;
  let stopping: Promise<void> | undefined;
  const stop = () => {
    stopping ??= terminate(proc, options.killGraceMs);
  };
  const timer = setTimeout(() => {
    timed_out = true;
    stop();
  }, options.timeoutMs);
  const onAbort = () => {
    cancelled = true;
    stop();
  };
  if (options.signal?.aborted) onAbort();
  options.signal?.addEventListener('abort', onAbort, { once: true });
  try {
    let byDriver = false;
    const report = reported(proc, options.launch?.()).then((exit) => {
      byDriver = true;
      return exit;
    });
    const exit = await Promise.race([proc.exited, report]);
    // The run is over when its leader exits: nothing it started may outlive it. When its driver
    // reported the end (with end marks after the output), its processes are only stopped now; they
    // are killed once the result is out (dispose), as their teardown would compete with it for CPU.
    if (byDriver && filters && proc.stop) {
      proc.stop();
      // The driver wrote its end marks before its report. Without them (the program closed the
      // driver's copies of stdout and stderr) only the streams' end tells that all output is in,
      // and stopped processes keep them open: kill now.
      const wait = proc.relaysOutput ? RELAYED_MARK_WAIT_MS : MARK_WAIT_MS;
      if (!allIn() && !(await within(marked, wait))) proc.kill('SIGKILL');
    } else proc.kill('SIGKILL');
    await stopping;
    if (allIn()) {
      proc.stdout.destroy();
      proc.stderr.destroy();
    } else await drain(proc, 500, filters && marked);
    for (const [name, collector] of [
      ['stdout', stdout],
      ['stderr', stderr],
    ] as const) {
      const rest = filters?.[name].end();
      const text = (rest?.length ? collector.push(rest) : '') + collector.flush();
      if (text) options.onOutput?.(name, text);
    }
    const note = (text: string) => stderr.push(Buffer.from(`\n[codexec: ${text}]\n`));
    if (exit.spawnError) note(`could not start the program: ${exit.spawnError.message}`);
    if (exit.limit) note(proc.limitDetail?.(exit.limit) ?? limitNote(exit.limit, options.limits));
    if (timed_out) note(`timed out after ${options.timeoutMs} ms; process killed`);
    const out = stdout.finish();
    const err = stderr.finish();
    const saved = closeSaved(options.save);
    return {
      stdout: out.text,
      stderr: err.text,
      truncated: out.truncated || err.truncated,
      exit_code: timed_out || cancelled ? null : (exit.code ?? signalExitCode(exit.signal)),
      timed_out,
      cancelled,
      ...(exit.limit && { limit: exit.limit }),
      ...(saved && { output_saved: saved }),
    };
  } finally {
    closeSaved(options.save); // on every path (idempotent)
    clearTimeout(timer);
    options.signal?.removeEventListener('abort', onAbort);
  }
}

/**
 * The process's output into bounded collectors (saved whole where asked), through the end marks'
 * filters where the run has marks, to `onOutput` as it comes; `marked` resolves, and allIn() is
 * true, once both marks went by.
 */
function listen(proc: SandboxedProcess, options: CollectOptions) {
  const stdout = new OutputCollector(options.output, options.secrets?.stream());
  const stderr = new OutputCollector(options.output, options.secrets?.stream());
  if (options.save) {
    stdout.saveTo(options.save.stdout);
    stderr.saveTo(options.save.stderr);
  }
  const mark = options.endMark ? Buffer.from(options.endMark) : undefined;
  const filters = mark && { stdout: new EndMarkFilter(mark), stderr: new EndMarkFilter(mark) };
  let bothMarked: () => void = () => {};
  const marked = new Promise<void>((resolve) => {
    bothMarked = resolve;
  });
  /** Both marks are in: so is all output, which no timer need then wait for. */
  const allIn = () => filters?.stdout.seen === true && filters.stderr.seen;
  const forward = (name: OutputStream, collector: OutputCollector) => (chunk: Buffer) => {
    const text = collector.push(filters ? filters[name].push(chunk) : chunk);
    if (text) options.onOutput?.(name, text);
    if (allIn()) bothMarked();
  };
  proc.stdout.on('data', forward('stdout', stdout));
  proc.stderr.on('data', forward('stderr', stderr));
  return { stdout, stderr, filters, marked, allIn };
}

/** Close the saved streams; what they kept, undefined when nothing. */
export function closeSaved(save: CollectOptions['save']): OutputSaved | undefined {
  if (!save) return undefined;
  const stdout = save.stdout.close();
  const stderr = save.stderr.close();
  return stdout || stderr ? { ...(stdout && { stdout }), ...(stderr && { stderr }) } : undefined;
}

/** How long the end marks may trail the driver's report on a stopped run. */
const MARK_WAIT_MS = 50;
/**
 * The same where output is relayed (a container engine's CLI, and under gVisor its Sentry too):
 * the marks trail by the relay's latency, which under load passed 50 ms and lost a warm run's
 * output. Waited in full only by a program that closed its own stdout and stderr.
 */
const RELAYED_MARK_WAIT_MS = 1000;

/**
 * An Exit built from the driver's report. Everything the program wrote went out before the report,
 * and the streams end once the SIGKILL that follows has closed every copy of them.
 */
async function reported(
  proc: SandboxedProcess,
  status: Promise<number | undefined> | undefined,
): Promise<Exit> {
  const code = await status;
  if (code === undefined) return new Promise<never>(() => {});
  const limit = proc.limitHit?.();
  return { code, signal: null, ...(limit && { limit }) };
}

/** What a result's stderr says of the limit that stopped its process. */
export function limitNote(limit: LimitKind, limits: NamedLimits | undefined): string {
  switch (limit) {
    case 'memory':
      return `memory limit reached (${limits?.memorySetting ?? `CODEXEC_MEMORY_MB=${limits?.memoryMb}`}); process killed`;
    case 'processes':
      return `process limit reached (CODEXEC_MAX_PROCS=${limits?.maxProcs}); new processes were refused`;
    case 'cpu':
      return 'CPU time limit reached; process killed';
    case 'file_size':
      return `file size limit reached (CODEXEC_MAX_FILE_MB=${limits?.maxFileMb}); write refused`;
    case 'disk':
      return 'disk limit reached (CODEXEC_MAX_WORKSPACE_MB); process killed';
  }
}

function signalExitCode(signal: NodeJS.Signals | null): number | null {
  if (signal === null) return null;
  return 128 + (constants.signals[signal] ?? 0);
}
