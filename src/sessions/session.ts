// One session: its sandboxed driver, a send (cell) at a time over the control channel, interrupts
// and kills, background processes' messages, its end. Its output (send-output.ts), the wait for
// input (stdin-wait.ts), marks, stopper and what a send's result says (send-result.ts) live in
// files of their own.
import { type ArtifactDiff, drain, snapshotDir } from '../engine/index.js';
import { InvalidInputError } from '../errors/index.js';
import { CodeSyntaxError } from '../runtimes/index.js';
import { countCpu, type Exit, type LimitKind, type SandboxedProcess } from '../sandbox/index.js';
import { chargeCpu, log, newId } from '../util/index.js';
import { ControlLink } from './control.js';
import { SessionNotFoundError, SessionStartError } from './errors.js';
import { SendMarks } from './marks.js';
import { prepareCell } from './prepare.js';
import type { DoneMessage, ProcMessage } from './protocol.js';
import { SendOutput } from './send-output.js';
import {
  assertTurn,
  type Death,
  deathMessage,
  describeExit,
  diedAt,
  executionLine,
  exitCodeOf,
  sendFiles,
  startFailure,
  unrunResult,
} from './send-result.js';
import type { SessionOptions } from './session-options.js';
import { InputWatch, promptOf, WAITING, watchInput } from './stdin-wait.js';
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

const NO_CHANGES: ArtifactDiff = { created: [], modified: [], deleted: [] };

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
  readonly finished: Promise<void>;

  private lastActivity = this.startedAt;
  private executions = 0;
  /** Set by whoever ends the session on purpose; an unexpected exit is a crash. */
  private reason: EndReason | undefined;
  private pending = 0;
  private running = false;
  private queue: Promise<unknown> = Promise.resolve();
  private readonly output: SendOutput;
  private readonly link: ControlLink;
  private exit: Exit | undefined;
  /** The cell sent and not ended (it may span sends: see Cell.waitingForInput). */
  private cell: Cell | undefined;
  private readonly inputWatch: InputWatch;
  private killedAfterInterrupt = false;
  /** The bound that ended the session, said: the disk watcher's, or its sandbox's (diedAt). */
  private limitNote: string | undefined;
  private limitKind: LimitKind = 'disk';
  private endNotified = false;
  private resolveFinished!: () => void;

  constructor(
    private readonly proc: SandboxedProcess,
    readonly options: SessionOptions,
  ) {
    this.finished = new Promise((resolve) => {
      this.resolveFinished = resolve;
    });
    this.output = new SendOutput(proc, options.config.output, options.secrets, options.outputs);
    // On a terminal, a read of it is the wait (the relay always watches the session's stdin).
    this.inputWatch = new InputWatch(proc.processRoot ?? (async () => proc.pid), options.pty === true);
    // stdin stays open: code reading it waits for input (a send says so: waiting_for_input).
    proc.stdin?.on('error', () => {}); // written after the process closed it or exited
    this.link = new ControlLink(proc, options.onProcess, (error) => {
      log('error', `session ${this.id}: corrupt control channel (${error.message}); killing it`);
      this.reason ??= 'crashed';
      this.proc.kill('SIGKILL');
    });
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
  /** Why it was ended on purpose (undefined: it runs, or it crashed). */
  get endReason(): EndReason | undefined {
    return this.reason;
  }
  get lastActivityAt(): Date {
    return this.lastActivity;
  }
  get executionsCount(): number {
    return this.executions;
  }

  /** A call about the session (its processes) counts as its activity. */
  touch(): void {
    this.lastActivity = new Date();
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
    if (this.exit === undefined && this.reason === undefined) return '';
    const reason = this.reason ?? 'crashed';
    if (this.limitNote) return this.limitNote;
    return reason === 'crashed' && this.exit ? `crashed: ${describeExit(this.exit)}` : reason;
  }

  /** Wait for the driver's `ready`; on failure the process is killed and a clear error thrown. */
  async ready(): Promise<void> {
    const outcome = await this.link.ready(READY_TIMEOUT_MS);
    if (outcome === 'ready') return;
    this.reason = 'crashed';
    this.proc.kill('SIGKILL');
    const exit = await this.proc.exited;
    await drain(this.proc, 500);
    const why = outcome === 'timeout' ? `did not start within ${READY_TIMEOUT_MS} ms` : startFailure(exit);
    const stderr = this.output.stderrTail();
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
      this.lastActivity = new Date();
    });
  }

  /** A bound outside the process (its workspace's disk) ends the session; its send says which. */
  stopForLimit(note: string): Promise<void> {
    this.limitNote ??= note;
    return this.kill('disk_limit');
  }

  /** Ask the driver about a background process; its answers come to options.onProcess. */
  control(message: ProcMessage): void {
    if (this.alive) this.link.write(message);
  }

  /** Kill the whole process group and wait until the end has been handled. */
  async kill(reason: EndReason): Promise<void> {
    this.reason ??= reason;
    this.proc.kill('SIGKILL');
    await this.finished;
  }

  private async execute(request: SendRequest): Promise<SendResult> {
    if (!this.alive || this.reason) {
      throw new SessionNotFoundError(`session ${this.id} has ended; start a new one with start_session`);
    }
    const cell = this.cell;
    assertTurn(this.id, request, cell);
    this.running = true;
    this.output.listen(request.onOutput);
    // The session's cgroup counts its whole life: a send is charged what was used while it ran.
    const used = countCpu(this.proc);
    try {
      return cell ? await this.answer(cell, request) : await this.runCell(request);
    } finally {
      chargeCpu(used());
      this.output.end();
      this.running = false;
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
    const { pty } = this.options;
    const marks = new SendMarks(pty);
    this.output.marks = marks;
    const done = this.link.exec({ type: 'exec', id: executionId, mark: marks.mark, code: prepared });
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
    this.lastActivity = new Date();
    this.executions += 1;
    this.output.save(executionId);
    return executionId;
  }

  private base(executionId: string) {
    return { execution_id: executionId, session_id: this.id, language: this.options.language };
  }

  /** A send that ran no cell to its end (a syntax error, a wait for input): its output so far. */
  private unrun(executionId: string, started: number): SendResult {
    return unrunResult(this.base(executionId), this.output.collect(), started);
  }

  /** One send's share of a cell: until it ends, the session dies, or it waits for input. */
  private async runPart(
    request: SendRequest,
    cell: Cell,
    executionId: string,
    started: number,
    stdin: string | null,
  ): Promise<SendResult> {
    const { config } = this.options;
    const stopper = new SendStopper(
      this.proc,
      Math.min(request.timeoutMs ?? config.defaultTimeoutMs, config.maxTimeoutMs),
      config.killGraceMs,
      request.signal,
      () => {
        this.killedAfterInterrupt = true;
        this.reason ??= 'crashed';
      },
    );
    const watch = watchInput(
      this.inputWatch,
      started,
      () => this.output.lastOutputAt,
      () => stopper.stopped,
    );
    const outcome = await Promise.race([cell.done, this.proc.exited, watch.waiting]).finally(() => {
      stopper.dispose();
      watch.stop();
    });
    if (outcome === WAITING) return this.waitingResult(cell, executionId, started, stdin);
    this.cell = undefined;
    this.link.forget();
    const answered = 'type' in outcome;
    // `done` comes on the control channel, the output on stdout and stderr: the server may read
    // `done` first (a background process's frames wake it for the channel while the cell still
    // writes; a relay lags). The marks the driver writes after the cell's output say when all of it
    // is in; after an exit, what they held back as a possible mark's start is output too.
    if (!answered) await drain(this.proc, 500);
    const died =
      !(answered || this.limitNote || this.killedByServer) && diedAt(outcome, this.proc, this.options.limits);
    if (died) [this.limitKind, this.limitNote] = [died.kind, died.note];
    const { marks } = this.output;
    if (marks) this.output.pushHeld(await marks.settle(this.proc.exited));
    this.output.marks = undefined;
    const duration_ms = Date.now() - started;
    const collected = this.output.collect();
    const { listed, pictures } = await sendFiles(cell, this.options);
    const result: SendResult = {
      ...this.base(executionId),
      ...collected,
      stderr: collected.stderr + stopper.note(answered),
      success: answered && outcome.status === 'ok' && !stopper.stopped,
      exit_code: stopper.stopped
        ? null
        : answered
          ? outcome.exit_code
          : exitCodeOf(outcome, this.killedByServer),
      duration_ms,
      timed_out: stopper.timedOut,
      cancelled: stopper.cancelled,
      artifacts: listed.artifacts,
      artifacts_deleted: listed.deleted,
      ...(listed.omitted && { artifacts_omitted: listed.omitted }),
      session_alive: answered,
      ...pictures,
    };
    if (!answered) result.error = deathMessage(outcome, this.death);
    if (!answered && this.limitNote) {
      result.limit = this.limitKind;
      result.stderr += `\n[codexec: ${this.limitNote}; process killed]\n`;
    }
    this.log(cell.code, result, listed.logged, started, stdin);
    return result;
  }

  /** The send's answer while its cell waits for input: the output so far and the prompt. */
  private waitingResult(cell: Cell, executionId: string, started: number, stdin: string | null): SendResult {
    cell.waitingForInput = true;
    if (this.output.marks) this.output.pushHeld(this.output.marks.release());
    const result = this.unrun(executionId, started);
    // Nothing failed: the code waits for an answer (the log's status follows exit_code, null).
    result.success = true;
    result.waiting_for_input = true;
    result.prompt = promptOf(this.output.latestStream === 'stderr' ? result.stderr : result.stdout);
    this.log(cell.code, result, NO_CHANGES, started, stdin);
    return result;
  }

  /** The seed's session `execution` line (plus language, flags, sandbox mode, artifacts). */
  private log(
    code: string,
    result: SendResult,
    artifacts: ArtifactDiff,
    started: number,
    stdin: string | null,
  ): void {
    this.options.onExecution(executionLine(this.options, { code, result, artifacts, started, stdin }));
  }

  /** The driver died because the server killed it (an interrupt not obeyed, an end on purpose). */
  private get killedByServer(): boolean {
    return this.killedAfterInterrupt || this.reason !== undefined;
  }

  private get death(): Death {
    const { language, config } = this.options;
    const { killedAfterInterrupt, limitNote, reason } = this;
    return { language, killGraceMs: config.killGraceMs, killedAfterInterrupt, limitNote, endReason: reason };
  }

  private async notifyEnd(): Promise<void> {
    if (this.endNotified || !this.exit) return;
    this.endNotified = true;
    try {
      await this.proc.dispose();
      await this.options.onEnd(this.exit);
    } finally {
      this.resolveFinished();
    }
  }
}
