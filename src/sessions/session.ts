// One session: its sandboxed driver, a send (cell) at a time over the control channel, output
// collected per send, interrupts and kills, background processes' messages, its end. Over 400
// lines: a send's steps (cell, marks, stopper, artifacts, pictures, log) and the driver's life
// share the session's state; the protocol, marks, stopper and processes live in files of their own.
import { constants } from 'node:os';
import type { Config } from '../config/index.js';
import {
  type ArtifactDiff,
  closeSaved,
  collectImages,
  diffSnapshots,
  drain,
  listArtifacts,
  OutputCollector,
  snapshotDir,
} from '../engine/index.js';
import { InvalidInputError } from '../errors/index.js';
import { type OutputSaved, type SavedOutputs, type SavedStream, savedBytes } from '../outputs/index.js';
import type { SecretsFilter } from '../policy/index.js';
import { CodeSyntaxError, type Language } from '../runtimes/index.js';
import { countCpu, type Exit, type SandboxedProcess } from '../sandbox/index.js';
import { chargeCpu, currentPrincipal, type HeldDir, log, newId } from '../util/index.js';
import { SessionNotFoundError, SessionStartError } from './errors.js';
import { SendMarks } from './marks.js';
import { prepareCell } from './prepare.js';
import {
  type DoneMessage,
  type DriverMessage,
  encodeFrame,
  FrameDecoder,
  type ProcEvent,
  type ProcMessage,
} from './protocol.js';

import { InputWatch, promptOf } from './stdin-wait.js';
import { SendStopper } from './stopper.js';
import type { EndReason, SendRequest, SendResult } from './types.js';

/** A cell that has been sent and has not ended: over several sends when it waits for input. */
interface Cell {
  readonly code: string;
  readonly done: Promise<DoneMessage>;
  readonly before: Awaited<ReturnType<typeof snapshotDir>>;
  readonly ownWorkspace: boolean;
  /** A send returned saying the cell waits for input; the next send must answer it. */
  waitingForInput: boolean;
}

/** How long output must have been quiet before /proc is asked whether the code waits for input. */
const QUIET_MS = 100;
/** How often it is asked then (every LOOK_MS, LONG_LOOK_MS once the send has run LONG_SEND_MS). */
const LOOK_MS = 150;
const LONG_LOOK_MS = 500;
const LONG_SEND_MS = 3000;
const WAITING = Symbol('waiting for input');
const NO_CHANGES: ArtifactDiff = { created: [], modified: [], deleted: [] };

export interface SessionOptions {
  readonly id: string;
  readonly language: Language;
  readonly name: string | null;
  readonly cwd: string;
  /** cwd, held by descriptor for the session's life: its files are walked and read through it. */
  readonly dir: HeldDir;
  /** The session's own workspace (`sess_*`), which cwd is unless a working_dir was given. */
  readonly workspace: string;
  /** The workspace whose figures folder a send's matplotlib figures are saved in (Python). */
  readonly figuresWorkspace?: string | undefined;
  readonly config: Config;
  readonly sandboxMode: string;
  /** The driver runs on drivers/pty_relay.py's terminal: output relayed, stdout and stderr merged. */
  readonly pty?: boolean | undefined;
  /** Its driver serves background processes (start_process): a bash one needs its host. */
  readonly hostsProcesses?: boolean | undefined;
  /** Masks secrets in the output before results, progress and logs see it. */
  readonly secrets?: SecretsFilter | undefined;
  /** Keeps the whole output of a send the result truncates (absent: none kept). */
  readonly outputs?: SavedOutputs | undefined;
  /** Called after each send with its log entry (the seed's session `execution` line). */
  readonly onExecution: (entry: Record<string, unknown>) => void;
  /** What the driver says about the session's background processes (processes.ts). */
  readonly onProcess?: ((event: ProcEvent) => void) | undefined;
  /** Called once, after the process is gone and any running send has returned. */
  readonly onEnd: (session: Session, exit: Exit) => Promise<void>;
}

/** Time a driver gets to say it is ready (interpreter start-up under load). */
const READY_TIMEOUT_MS = 20_000;
/**
 * One live driver process and its control channel. Sends are queued and run one at a time; a
 * send ends when the driver reports `done`, or when the process exits. On timeout (or cancel)
 * the process group gets SIGINT; if the driver has not answered after the kill grace period,
 * the group is SIGKILLed and the session is over.
 */
export class Session {
  readonly startedAt = new Date();
  lastActivityAt = this.startedAt;
  executionsCount = 0;
  readonly packagesInstalled: string[] = [];
  /** Set by whoever ends the session on purpose; an unexpected exit is a crash. */
  endReason: EndReason | undefined;
  readonly finished: Promise<void>;

  private pending = 0;
  private running = false;
  private queue: Promise<unknown> = Promise.resolve();
  private stdout: OutputCollector;
  private stderr: OutputCollector;
  /** The running send's saved streams (CODEXEC_MAX_SAVED_OUTPUT_BYTES). */
  private saving: Record<'stdout' | 'stderr', SavedStream> | undefined;
  private readonly decoder = new FrameDecoder();
  private waiting: { readonly id: string; readonly resolve: (done: DoneMessage) => void } | undefined;
  private onReady: ((pid: number) => void) | undefined;
  private onOutput: SendRequest['onOutput'];
  /** The running send's marks, when the process relays its output. */
  private marks: SendMarks | undefined;
  private exit: Exit | undefined;
  /** The cell sent and not ended (it may span sends: see Cell.waitingForInput). */
  private cell: Cell | undefined;
  private readonly inputWatch: InputWatch;
  private lastOutputAt = 0;
  private lastStream: 'stdout' | 'stderr' = 'stdout';
  private killedAfterInterrupt = false;
  /** The sentence of the bound (the disk watcher's) that ended the session. */
  private limitNote: string | undefined;
  private endNotified = false;
  private resolveFinished!: () => void;

  constructor(
    private readonly proc: SandboxedProcess,
    readonly options: SessionOptions,
  ) {
    this.finished = new Promise((resolve) => {
      this.resolveFinished = resolve;
    });
    this.stdout = this.collector();
    this.stderr = this.collector();
    // On a terminal, a read of it is the wait (the relay always watches the session's stdin).
    this.inputWatch = new InputWatch(proc.processRoot ?? (async () => proc.pid), options.pty === true);
    for (const stream of ['stdout', 'stderr'] as const) {
      proc[stream].on('data', (chunk: Buffer) => {
        this.lastOutputAt = Date.now();
        this.lastStream = stream;
        const text = this[stream].push(this.unmark(stream, chunk));
        if (text) this.onOutput?.(stream, text);
      });
    }
    // stdin stays open: code reading it waits for input (a send says so: waiting_for_input).
    proc.stdin?.on('error', () => {}); // written after the process closed it or exited
    const control = proc.control;
    if (!control) throw new TypeError('session drivers need a control channel');
    control.on('data', (chunk: Buffer) => this.onControl(chunk));
    void proc.exited.then((exit) => {
      this.exit = exit;
      if (!this.running) void this.notifyEnd();
    });
  }

  get id(): string {
    return this.options.id;
  }
  get pid(): number {
    return this.proc.pid ?? -1;
  }
  /** A send is running or queued. */
  get busy(): boolean {
    return this.pending > 0;
  }
  get alive(): boolean {
    return this.exit === undefined;
  }
  /** A send returned waiting_for_input and nothing has answered it yet. */
  get waitingForInput(): boolean {
    return this.cell?.waitingForInput === true;
  }

  /** write_stdin {session_id}: bytes to the session's stdin whatever runs; `eof` closes it for good. */
  writeStdin(data: Buffer, eof: boolean): void {
    const stdin = this.proc.stdin;
    if (!this.alive || !stdin?.writable) {
      throw new InvalidInputError(`the stdin of session ${this.id} is closed`);
    }
    if (data.length > 0) stdin.write(data);
    if (eof) stdin.end();
  }

  /** Why the session is over, for messages and tombstones ('' while it runs). */
  get endDetail(): string {
    if (this.exit === undefined && this.endReason === undefined) return '';
    const reason = this.endReason ?? 'crashed';
    if (this.limitNote) return this.limitNote;
    return reason === 'crashed' && this.exit ? `crashed: ${describeExit(this.exit)}` : reason;
  }

  /** Wait for the driver's `ready`; on failure the process is killed and a clear error thrown. */
  async ready(): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const ready = new Promise<'ready'>((resolve) => {
      this.onReady = () => resolve('ready');
    });
    const timeout = new Promise<'timeout'>((resolve) => {
      timer = setTimeout(() => resolve('timeout'), READY_TIMEOUT_MS);
    });
    const outcome = await Promise.race([ready, timeout, this.proc.exited]);
    clearTimeout(timer);
    this.onReady = undefined;
    if (outcome === 'ready') return;
    this.endReason = 'crashed';
    this.proc.kill('SIGKILL');
    const exit = await this.proc.exited;
    await drain(this.proc, 500);
    const why =
      outcome === 'timeout'
        ? `did not start within ${READY_TIMEOUT_MS} ms`
        : exit.spawnError
          ? `could not be started (${exit.spawnError.message})`
          : `exited during start-up (${describeExit(exit)})`;
    const stderr = this.stderr.finish().text.trim().slice(-2000);
    throw new SessionStartError(
      `the ${this.options.language} session driver ${why}${stderr ? `: ${stderr}` : ''}`,
    );
  }

  /** Queue one cell; resolves when it has run (or the session died running it). */
  send(request: SendRequest): Promise<SendResult> {
    this.pending += 1;
    const turn = this.queue.then(() => this.execute(request));
    this.queue = turn.catch(() => {});
    return turn.finally(() => {
      this.pending -= 1;
      this.lastActivityAt = new Date();
    });
  }

  /** A bound outside the process (its workspace's disk) ends the session; its send says which. */
  stopForLimit(note: string): Promise<void> {
    this.limitNote ??= note;
    return this.kill('disk_limit');
  }

  /** Ask the driver about a background process; its answers come to options.onProcess. */
  control(message: ProcMessage): void {
    if (this.alive) this.proc.control?.write(encodeFrame(message));
  }

  /** Kill the whole process group and wait until the end has been handled. */
  async kill(reason: EndReason): Promise<void> {
    this.endReason ??= reason;
    this.proc.kill('SIGKILL');
    await this.finished;
  }

  private async execute(request: SendRequest): Promise<SendResult> {
    if (!this.alive || this.endReason) {
      throw new SessionNotFoundError(`session ${this.id} has ended; start a new one with start_session`);
    }
    const cell = this.cell;
    const answers = request.code === undefined; // input or interrupt
    if (answers && !cell?.waitingForInput) {
      throw new InvalidInputError(
        `session ${this.id} is not waiting for input (input and interrupt answer a send that returned ` +
          'waiting_for_input); to write to its stdin anyway use write_stdin {session_id, data}',
      );
    }
    if (!answers && cell) {
      throw new InvalidInputError(
        `session ${this.id} is waiting for input to the code it runs; answer it with send_to_session ` +
          '{session_id, input}, interrupt it with {session_id, interrupt: true}, or end the session with kill_session',
      );
    }
    this.running = true;
    this.onOutput = request.onOutput;
    // The session's cgroup counts its whole life: a send is charged what was used while it ran.
    const used = countCpu(this.proc);
    try {
      return cell ? await this.answer(cell, request) : await this.runCell(request);
    } finally {
      chargeCpu(used());
      closeSaved(this.saving); // a send that failed before collecting its output
      this.saving = undefined;
      this.running = false;
      this.onOutput = undefined;
      if (!this.alive) await this.notifyEnd();
    }
  }

  private async runCell(request: SendRequest): Promise<SendResult> {
    const { cwd, dir } = this.options;
    const code = request.code as string;
    const executionId = this.beginPart();
    const started = Date.now();
    let prepared: string;
    try {
      prepared = prepareCell(this.options.language, code);
    } catch (error) {
      if (!(error instanceof CodeSyntaxError)) throw error;
      const result = this.unrun(executionId, started);
      result.stderr += `${this.options.secrets?.redact(error.message) ?? error.message}\n`;
      result.exit_code = 1;
      this.log(code, result, NO_CHANGES, started, null);
      return result;
    }
    const ownWorkspace = cwd === this.options.workspace;
    const before = await snapshotDir(dir, { ownWorkspace });
    const done = new Promise<DoneMessage>((resolve) => {
      this.waiting = { id: executionId, resolve };
    });
    const { pty } = this.options;
    const marks = this.proc.relaysOutput || pty ? new SendMarks(pty) : undefined;
    this.marks = marks;
    this.proc.control?.write(
      encodeFrame({ type: 'exec', id: executionId, ...(marks && { mark: marks.mark }), code: prepared }),
    );
    this.cell = { code, done, before, ownWorkspace, waitingForInput: false };
    return this.runPart(request, this.cell, executionId, started, null);
  }

  /**
   * send_to_session's `input`: written to stdin (with a newline if it has none), then the cell goes
   * on; its `interrupt`: the cell is interrupted at once, as on a timeout (the state is kept).
   */
  private answer(cell: Cell, request: SendRequest): Promise<SendResult> {
    const stdin = this.proc.stdin;
    const { input } = request;
    if (input !== undefined && !stdin?.writable) {
      throw new InvalidInputError(`the stdin of session ${this.id} was closed (write_stdin eof)`);
    }
    const executionId = this.beginPart();
    const started = Date.now();
    cell.waitingForInput = false;
    if (input === undefined) {
      return this.runPart({ ...request, signal: AbortSignal.abort() }, cell, executionId, started, null);
    }
    stdin?.write(input.endsWith('\n') ? input : `${input}\n`);
    return this.runPart(request, cell, executionId, started, input);
  }

  /** A new execution id for one send; its output is saved from here (CODEXEC_MAX_SAVED_OUTPUT_BYTES). */
  private beginPart(): string {
    const executionId = newId('exec');
    this.lastActivityAt = new Date();
    this.executionsCount += 1;
    this.saving = this.options.outputs?.streams(currentPrincipal(), executionId);
    if (this.saving) {
      this.stdout.saveTo(this.saving.stdout);
      this.stderr.saveTo(this.saving.stderr);
    }
    return executionId;
  }

  private base(executionId: string) {
    return { execution_id: executionId, session_id: this.id, language: this.options.language };
  }

  /** A send that ran no cell to its end (a syntax error, a wait for input): its output so far. */
  private unrun(executionId: string, started: number): SendResult {
    return {
      ...this.base(executionId),
      ...this.collect(),
      success: false,
      exit_code: null,
      duration_ms: Date.now() - started,
      timed_out: false,
      cancelled: false,
      artifacts: [],
      artifacts_deleted: [],
      session_alive: true,
      images: [],
    };
  }

  /** One send's share of a cell: until it ends, the session dies, or it waits for input. */
  private async runPart(
    request: SendRequest,
    cell: Cell,
    executionId: string,
    started: number,
    stdin: string | null,
  ): Promise<SendResult> {
    const { config, dir } = this.options;
    const stopper = new SendStopper(
      this.proc,
      Math.min(request.timeoutMs ?? config.defaultTimeoutMs, config.maxTimeoutMs),
      config.killGraceMs,
      request.signal,
      () => {
        this.killedAfterInterrupt = true;
        this.endReason ??= 'crashed';
      },
    );
    const watch = this.watchInput(started, () => stopper.stopped);
    const outcome = await Promise.race([cell.done, this.proc.exited, watch.waiting]).finally(() => {
      stopper.dispose();
      watch.stop();
    });
    if (outcome === WAITING) return this.waitingResult(cell, executionId, started, stdin);
    this.cell = undefined;
    this.waiting = undefined;
    const answered = 'type' in outcome;
    // Output written before `done` is already in the pipes: one turn of the loop reads it.
    const { marks } = this;
    // Relayed output may still be on its way: its marks say when it is all in (and after an exit,
    // what they held back as a possible mark's start is output too).
    if (!answered) await drain(this.proc, 500);
    else if (!marks) await new Promise((resolve) => setImmediate(resolve));
    if (marks) this.pushHeld(await marks.settle(this.proc.exited));
    this.marks = undefined;
    const duration_ms = Date.now() - started;
    const collected = this.collect();
    const { ownWorkspace } = cell;
    const diff = diffSnapshots(cell.before, await snapshotDir(dir, { ownWorkspace }));
    const listed = listArtifacts(diff, config.artifacts, this.options.secrets);
    const pictures = await collectImages({
      workspace: this.options.figuresWorkspace,
      workingDir: dir,
      artifacts: listed.plain,
      maxBytes: config.maxImageBytes,
    });
    const result: SendResult = {
      ...this.base(executionId),
      ...collected,
      stderr: collected.stderr + stopper.note(answered),
      success: answered && outcome.status === 'ok' && !stopper.stopped,
      exit_code: stopper.stopped ? null : answered ? outcome.exit_code : this.exitCodeOf(outcome),
      duration_ms,
      timed_out: stopper.timedOut,
      cancelled: stopper.cancelled,
      artifacts: listed.artifacts,
      artifacts_deleted: listed.deleted,
      ...(listed.omitted && { artifacts_omitted: listed.omitted }),
      session_alive: answered,
      ...pictures,
    };
    if (!answered) result.error = this.deathMessage(outcome);
    if (!answered && this.limitNote) {
      result.limit = 'disk';
      result.stderr += `\n[codexec: ${this.limitNote}; process killed]\n`;
    }
    this.log(cell.code, result, listed.logged, started, stdin);
    return result;
  }

  /** The send's answer while its cell waits for input: the output so far and the prompt. */
  private waitingResult(cell: Cell, executionId: string, started: number, stdin: string | null): SendResult {
    cell.waitingForInput = true;
    if (this.marks) this.pushHeld(this.marks.release());
    const result = this.unrun(executionId, started);
    result.waiting_for_input = true;
    result.prompt = promptOf(this.lastStream === 'stderr' ? result.stderr : result.stdout);
    this.log(cell.code, result, NO_CHANGES, started, stdin);
    return result;
  }

  /**
   * Resolves when the code is seen blocked reading input: looked at in /proc once output has been
   * quiet a moment, and again a moment later (a read about to be fed does not count). A send that
   * ends sooner never looks; a stopped one (timeout, cancel) no longer does.
   */
  private watchInput(
    started: number,
    stopped: () => boolean,
  ): { waiting: Promise<typeof WAITING>; stop(): void } {
    let timer: NodeJS.Timeout | undefined;
    let over = false;
    const quiet = () => !over && !stopped() && Date.now() - this.lastOutputAt >= QUIET_MS;
    const waiting = new Promise<typeof WAITING>((resolve) => {
      const look = async () => {
        if (quiet() && (await this.inputWatch.waiting())) {
          await new Promise((wait) => setTimeout(wait, QUIET_MS));
          if (quiet() && (await this.inputWatch.waiting())) return resolve(WAITING);
        }
        if (!over) timer = setTimeout(look, Date.now() - started < LONG_SEND_MS ? LOOK_MS : LONG_LOOK_MS);
      };
      timer = setTimeout(look, LOOK_MS);
    });
    return {
      waiting,
      stop: () => {
        over = true;
        clearTimeout(timer);
      },
    };
  }

  /** The seed's session `execution` line (plus language, flags, sandbox mode, artifacts). */
  private log(
    code: string,
    result: SendResult,
    artifacts: ArtifactDiff,
    started: number,
    stdin: string | null,
  ): void {
    this.options.onExecution({
      type: 'execution',
      execution_id: result.execution_id,
      session_id: this.id,
      language: this.options.language,
      code,
      stdin,
      stdout: result.stdout,
      stderr: result.stderr,
      exit_code: result.exit_code,
      timed_out: result.timed_out,
      cancelled: result.cancelled,
      duration_ms: result.duration_ms,
      sandbox_mode: this.options.sandboxMode,
      working_dir: this.options.cwd,
      artifacts,
      ...(result.artifacts_omitted && { artifacts_omitted: result.artifacts_omitted }),
      ...(result.waiting_for_input && { waiting_for_input: true, prompt: result.prompt }),
      at: new Date(started).toISOString(),
    });
  }

  /** Output the marks' filters held back as a possible mark's start, to the collectors. */
  private pushHeld(held: ReadonlyArray<readonly ['stdout' | 'stderr', Buffer]>): void {
    for (const [stream, rest] of held) {
      const text = rest.length > 0 ? this[stream].push(rest) : '';
      if (text) this.onOutput?.(stream, text);
    }
  }

  /** The output of `chunk` without the running send's mark (relayed output only). */
  private unmark(stream: 'stdout' | 'stderr', chunk: Buffer): Buffer {
    return this.marks ? this.marks.push(stream, chunk) : chunk;
  }

  private collect(): { stdout: string; stderr: string; truncated: boolean; output_saved?: OutputSaved } {
    // What the secrets filter held back (a possible secret's start) ends with the send's output.
    const outRest = this.stdout.flush();
    if (outRest) this.onOutput?.('stdout', outRest);
    const errRest = this.stderr.flush();
    if (errRest) this.onOutput?.('stderr', errRest);
    const out = this.stdout.finish();
    const err = this.stderr.finish();
    this.stdout = this.collector();
    this.stderr = this.collector();
    const saved = closeSaved(this.saving);
    this.saving = undefined;
    if (saved) void this.options.outputs?.trim(currentPrincipal(), savedBytes(saved)); // logs its own failure
    return {
      stdout: out.text,
      stderr: err.text,
      truncated: out.truncated || err.truncated,
      ...(saved && { output_saved: saved }),
    };
  }

  private collector(): OutputCollector {
    return new OutputCollector(this.options.config.output, this.options.secrets?.stream());
  }

  private exitCodeOf(exit: Exit): number | null {
    if (this.killedAfterInterrupt || this.endReason) return null;
    return exit.code ?? (exit.signal ? 128 + (constants.signals[exit.signal] ?? 0) : null);
  }

  private deathMessage(exit: Exit): string {
    const lost = 'the session has ended and its state is lost; start a new one with start_session';
    if (this.killedAfterInterrupt)
      return `the code did not stop within ${this.options.config.killGraceMs} ms of the interrupt, so the session's process was killed; ${lost}`;
    if (this.limitNote) return `${this.limitNote}, so the session was killed; ${lost}`;
    if (this.endReason === 'closed') return 'the session was closed while this code was running';
    if (this.endReason) return `the session was stopped (${this.endReason}) while this code was running`;
    return `the ${this.options.language} process exited (${describeExit(exit)}) while running this code; ${lost}`;
  }

  private onControl(chunk: Buffer): void {
    let messages: DriverMessage[];
    try {
      messages = this.decoder.push(chunk);
    } catch (error) {
      log('error', `session ${this.id}: corrupt control channel (${(error as Error).message}); killing it`);
      this.endReason ??= 'crashed';
      this.proc.kill('SIGKILL');
      return;
    }
    for (const message of messages) {
      if (message.type === 'ready') this.onReady?.(message.pid);
      else if (message.type === 'done') {
        if (message.id === this.waiting?.id) this.waiting.resolve(message);
      } else this.options.onProcess?.(message);
    }
  }

  private async notifyEnd(): Promise<void> {
    if (this.endNotified || !this.exit) return;
    this.endNotified = true;
    try {
      await this.proc.dispose();
      await this.options.onEnd(this, this.exit);
    } finally {
      this.resolveFinished();
    }
  }
}

export function describeExit(exit: Exit): string {
  if (exit.spawnError) return exit.spawnError.message;
  return exit.signal ? `killed by ${exit.signal}` : `exit code ${exit.code}`;
}
