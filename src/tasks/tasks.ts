import { log } from '../util/index.js';
import { TaskInput } from './input.js';
import { type TaskRecord, TaskStore } from './store.js';

/** What a run started as a task is handed instead of its request's signal and progress stream. */
export interface TaskRun {
  readonly taskId: string;
  /** Aborted by tasks/cancel and at shutdown: the run stops as on a client's cancellation. */
  readonly signal: AbortSignal;
  readonly onOutput: (stream: 'stdout' | 'stderr', text: string) => void;
  /**
   * Ask the client `request` (an MRTR input request: an elicitation, say) under `key`: the task
   * reads input_required until tasks/update answers it, then working again. Resolves with the
   * answer; rejects when `signal` (a timeout) or the task's own signal aborts first.
   */
  readonly ask: (key: string, request: unknown, signal?: AbortSignal) => Promise<unknown>;
}

export interface TasksOptions {
  /** `$CODEXEC_HOME/tasks.db`. */
  readonly path: string;
  /** CODEXEC_TASK_TTL_MS: how long a task is kept after it was created. */
  readonly ttlMs: number;
}

/** Output kept per task (its tail), and how often it is written while the run goes on. */
const KEPT_CHARS = 64 * 1024;
const FLUSH_MS = 250;
const SHUT_DOWN = 'server shut down';

interface Live {
  readonly controller: AbortController;
  output: string;
  dirty: boolean;
  timer: NodeJS.Timeout | undefined;
  readonly done: Promise<void>;
}

/**
 * Work handed back as a task: recorded in SQLite before the caller answers, run in the background,
 * its output so far written as it comes (throttled), its end recorded whatever the outcome.
 */
export class Tasks {
  private readonly store: TaskStore;
  private readonly live = new Map<string, Live>();
  private readonly input: TaskInput;

  constructor(private readonly options: TasksOptions) {
    this.store = new TaskStore(options.path);
    this.input = new TaskInput(this.store, (error) => log('error', `tasks.db: ${error.message}`));
  }

  get ttlMs(): number {
    return this.options.ttlMs;
  }

  /**
   * Record a working task for `principal` and start `work` on it. `work` resolves with the
   * request's final result (a tool error is a result too); a throw fails the task.
   */
  start(
    principal: string,
    tool: string,
    work: (run: TaskRun) => Promise<Record<string, unknown>>,
  ): TaskRecord {
    const record = this.store.create(principal, tool, this.options.ttlMs);
    const { taskId } = record;
    const controller = new AbortController();
    let resolveDone: () => void = () => {};
    const entry: Live = {
      controller,
      output: '',
      dirty: false,
      timer: undefined,
      done: new Promise((resolve) => {
        resolveDone = resolve;
      }),
    };
    this.live.set(taskId, entry);
    const onOutput = (stream: 'stdout' | 'stderr', text: string) => {
      const tagged = stream === 'stderr' ? `[stderr] ${text}` : text;
      entry.output = (entry.output + tagged).slice(-KEPT_CHARS);
      entry.dirty = true;
      entry.timer ??= setTimeout(() => this.flush(taskId), FLUSH_MS);
    };
    const ask = (key: string, request: unknown, signal?: AbortSignal) => {
      if (entry.dirty) this.flush(taskId); // what led to the question is shown with it
      const stop = signal ? AbortSignal.any([controller.signal, signal]) : controller.signal;
      return this.input.ask(taskId, key, request, stop);
    };
    void work({ taskId, signal: controller.signal, onOutput, ask })
      .then(
        (result) => this.end(taskId, { status: 'completed', result, output: entry.output }),
        (error: Error) => {
          log('error', `task ${taskId}: ${error.stack ?? error.message}`);
          this.end(taskId, {
            status: 'failed',
            error: { code: -32603, message: error.message },
            output: entry.output,
          });
        },
      )
      .finally(() => {
        clearTimeout(entry.timer);
        this.live.delete(taskId);
        resolveDone();
      });
    return record;
  }

  /** The task as recorded, its latest output included; undefined for another principal's. */
  get(taskId: string, principal: string): TaskRecord | undefined {
    if (this.live.get(taskId)?.dirty) this.flush(taskId);
    return this.store.get(taskId, principal);
  }

  list(principal: string): TaskRecord[] {
    for (const [taskId, entry] of this.live) if (entry.dirty) this.flush(taskId);
    return this.store.list(principal);
  }

  /**
   * tasks/update: answers to the task's outstanding requests (others are ignored), handed to its
   * run. False when there is no such task for this principal.
   */
  update(taskId: string, principal: string, answers: Record<string, unknown>): boolean {
    if (!this.store.answer(taskId, principal, answers)) return false;
    this.input.deliver(taskId);
    return true;
  }

  /**
   * Cancel: the task reads cancelled at once and its run is aborted (killed as a client's
   * cancellation kills it). False when there is no such task for this principal.
   */
  cancel(taskId: string, principal: string): boolean {
    const record = this.store.get(taskId, principal);
    if (!record) return false;
    const entry = this.live.get(taskId);
    this.store.finish(taskId, { status: 'cancelled', ...(entry && { output: entry.output }) });
    entry?.controller.abort(new Error('cancelled by tasks/cancel'));
    return true;
  }

  /**
   * Stop every running task, each read failed "server shut down" with its output so far (as after a
   * restart), and wait until their runs are gone.
   */
  async shutdown(): Promise<void> {
    const running = [...this.live.entries()];
    for (const [taskId, entry] of running) {
      this.end(taskId, {
        status: 'failed',
        error: { code: -32603, message: SHUT_DOWN },
        output: entry.output,
      });
      entry.controller.abort(new Error(SHUT_DOWN));
    }
    await Promise.all(running.map(([, entry]) => entry.done));
  }

  close(): void {
    this.store.close();
  }

  private flush(taskId: string): void {
    const entry = this.live.get(taskId);
    if (!entry) return;
    clearTimeout(entry.timer);
    entry.timer = undefined;
    if (!entry.dirty) return;
    entry.dirty = false;
    this.guard(() => this.store.setOutput(taskId, entry.output, null));
  }

  private end(taskId: string, end: Parameters<TaskStore['finish']>[1]): void {
    this.guard(() => this.store.finish(taskId, end));
  }

  /** A failed write is said on stderr: the run itself has ended either way. */
  private guard(write: () => unknown): void {
    try {
      write();
    } catch (error) {
      log('error', `tasks.db: ${(error as Error).message}`);
    }
  }
}
