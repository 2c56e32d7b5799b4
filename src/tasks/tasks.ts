import { log } from '../util/index.js';
import { TaskInput } from './input.js';
import type { TaskEnd, TaskRecord, TaskStore } from './store.js';

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
  /** CODEXEC_TASK_TTL_MS: how long a task is kept after it was created. */
  readonly ttlMs: number;
  /** Where the records are: tasks.db, or the shared database (replicas). */
  readonly store: TaskStore;
}

/** Output kept per task (its tail), and how often it is written while the run goes on. */
const KEPT_CHARS = 64 * 1024;
const FLUSH_MS = 250;
/** A shared store: how often the owner looks whether its running tasks were ended elsewhere. */
const CANCEL_POLL_MS = 250;
const SHUT_DOWN = 'server shut down';
const CANCELLED = 'cancelled by tasks/cancel';

/** Told the task as recorded after each change of its status (notifications/tasks/status). */
export type StatusListener = (record: TaskRecord) => void;

interface Watcher {
  readonly principal: string;
  readonly listener: StatusListener;
  /** The status last told (the caller's answer tells the first). */
  told: string;
}

const ENDED = new Set(['completed', 'failed', 'cancelled']);

interface Live {
  readonly controller: AbortController;
  output: string;
  dirty: boolean;
  timer: NodeJS.Timeout | undefined;
  readonly done: Promise<void>;
}

/**
 * Work handed back as a task: recorded before the caller answers, run in the background, its
 * output so far written as it comes (throttled), its end recorded whatever the outcome. With a
 * shared store, a task cancelled through another replica is stopped here within CANCEL_POLL_MS.
 */
export class Tasks {
  private readonly store: TaskStore;
  private readonly live = new Map<string, Live>();
  private readonly input: TaskInput;
  private poller: NodeJS.Timeout | undefined;
  /** The last look for cancels failed (the database unreachable). */
  private unreachable = false;
  private readonly watchers = new Map<string, Watcher>();
  /** Told the id of each task whose status may have just changed here (listens re-read it). */
  private readonly changes = new Set<(taskId: string) => void>();

  constructor(private readonly options: TasksOptions) {
    this.store = options.store;
    this.input = new TaskInput(
      this.store,
      (error) => log('error', `tasks: ${error.message}`),
      // Told to listens only: the 2025-era status watcher has never been told of a withdrawal.
      (taskId) => this.announce(taskId),
    );
  }

  get ttlMs(): number {
    return this.options.ttlMs;
  }

  /** Whether other processes share the records (replicas): a task may change there. */
  get shared(): boolean {
    return this.store.shared;
  }

  /** Whether `taskId` runs in this process (its changes are told here as they happen). */
  runsHere(taskId: string): boolean {
    return this.live.has(taskId);
  }

  /**
   * Be told the id of each task whose status may have changed in this process (asked, answered,
   * cancelled, ended), after the change is recorded; returns the way to stop.
   */
  onChange(listener: (taskId: string) => void): () => void {
    this.changes.add(listener);
    return () => this.changes.delete(listener);
  }

  /**
   * Record a working task for `principal` and start `work` on it. `work` resolves with the
   * request's final result (a tool error is a result too); a throw fails the task. `onStatus` is
   * told each later change of its status, until it ends.
   */
  async start(
    principal: string,
    tool: string,
    work: (run: TaskRun) => Promise<Record<string, unknown>>,
    onStatus?: StatusListener,
  ): Promise<TaskRecord> {
    const record = await this.store.create(principal, tool, this.options.ttlMs);
    const { taskId } = record;
    if (onStatus) this.watchers.set(taskId, { principal, listener: onStatus, told: record.status });
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
    if (this.store.shared) this.poller ??= setInterval(() => void this.stopEnded(), CANCEL_POLL_MS).unref();
    const onOutput = (stream: 'stdout' | 'stderr', text: string) => {
      const tagged = stream === 'stderr' ? `[stderr] ${text}` : text;
      entry.output = (entry.output + tagged).slice(-KEPT_CHARS);
      entry.dirty = true;
      entry.timer ??= setTimeout(() => void this.flush(taskId), FLUSH_MS);
    };
    const ask = (key: string, request: unknown, signal?: AbortSignal) => {
      if (entry.dirty) void this.flush(taskId); // what led to the question is shown with it
      const stop = signal ? AbortSignal.any([controller.signal, signal]) : controller.signal;
      const answered = this.input.ask(taskId, key, request, stop);
      void this.input.written(taskId).then(() => this.changed(taskId));
      return answered;
    };
    void work({ taskId, signal: controller.signal, onOutput, ask })
      .then(
        (result) => this.end(taskId, { status: 'completed', result, output: entry.output }),
        (error: Error) => {
          log('error', `task ${taskId}: ${error.stack ?? error.message}`);
          return this.end(taskId, {
            status: 'failed',
            error: { code: -32603, message: error.message },
            output: entry.output,
          });
        },
      )
      .finally(() => {
        clearTimeout(entry.timer);
        this.live.delete(taskId);
        if (this.live.size === 0) this.stopPolling();
        resolveDone();
      });
    return record;
  }

  /** The task as recorded, its latest output included; undefined for another principal's. */
  async get(taskId: string, principal: string): Promise<TaskRecord | undefined> {
    if (this.live.get(taskId)?.dirty) await this.flush(taskId);
    await this.input.written(taskId); // a question its run just asked shows (a shared store's write)
    return await this.store.get(taskId, principal);
  }

  async list(principal: string): Promise<TaskRecord[]> {
    const dirty = [...this.live].filter(([, entry]) => entry.dirty);
    await Promise.all(dirty.map(([taskId]) => this.flush(taskId)));
    return await this.store.list(principal);
  }

  /**
   * tasks/update: answers to the task's outstanding requests (others are ignored), handed to its
   * run (here, or by its owner's poll). False when there is no such task for this principal.
   */
  async update(taskId: string, principal: string, answers: Record<string, unknown>): Promise<boolean> {
    if (!(await this.store.answer(taskId, principal, answers))) return false;
    await this.input.deliver(taskId);
    void this.changed(taskId);
    return true;
  }

  /**
   * Cancel: the task reads cancelled at once and its run is aborted (killed as a client's
   * cancellation kills it; a shared store's owner elsewhere stops it when it next looks). False
   * when there is no such task for this principal.
   */
  async cancel(taskId: string, principal: string): Promise<boolean> {
    const record = await this.store.get(taskId, principal);
    if (!record) return false;
    const entry = this.live.get(taskId);
    await this.store.finish(taskId, { status: 'cancelled', ...(entry && { output: entry.output }) });
    entry?.controller.abort(new Error(CANCELLED));
    void this.changed(taskId);
    return true;
  }

  /**
   * Stop every running task, each read failed "server shut down" with its output so far (as after a
   * restart), and wait until their runs are gone.
   */
  async shutdown(): Promise<void> {
    this.stopPolling();
    const running = [...this.live.entries()];
    const ends = running.map(([taskId, entry]) =>
      this.end(taskId, {
        status: 'failed',
        error: { code: -32603, message: SHUT_DOWN },
        output: entry.output,
      }),
    );
    for (const [, entry] of running) entry.controller.abort(new Error(SHUT_DOWN));
    await Promise.all([...ends, ...running.map(([, entry]) => entry.done)]);
  }

  async close(): Promise<void> {
    this.stopPolling();
    await this.store.close();
  }

  /** A shared store: abort the runs of this replica's tasks that another replica cancelled. */
  private async stopEnded(): Promise<void> {
    let ended: string[];
    try {
      ended = await this.store.ended([...this.live.keys()]);
      this.unreachable = false;
    } catch (error) {
      // Said once per outage, not every CANCEL_POLL_MS; the runs go on meanwhile.
      if (!this.unreachable) log('warn', `tasks: cannot look for cancels: ${(error as Error).message}`);
      this.unreachable = true;
      return;
    }
    for (const taskId of ended) this.live.get(taskId)?.controller.abort(new Error(CANCELLED));
  }

  private stopPolling(): void {
    clearInterval(this.poller);
    this.poller = undefined;
  }

  private async flush(taskId: string): Promise<void> {
    const entry = this.live.get(taskId);
    if (!entry) return;
    clearTimeout(entry.timer);
    entry.timer = undefined;
    if (!entry.dirty) return;
    entry.dirty = false;
    await this.guard(() => this.store.setOutput(taskId, entry.output, null));
  }

  private async end(taskId: string, end: TaskEnd): Promise<void> {
    await this.guard(() => this.store.finish(taskId, end));
    await this.changed(taskId);
  }

  /** Tell the task's watcher its status, when it changed; an ended task's watcher goes. */
  private async changed(taskId: string): Promise<void> {
    this.announce(taskId);
    const watcher = this.watchers.get(taskId);
    if (!watcher) return;
    const record = await this.store.get(taskId, watcher.principal).catch(() => undefined);
    if (!record || record.status === watcher.told) return;
    watcher.told = record.status;
    if (ENDED.has(record.status)) this.watchers.delete(taskId);
    watcher.listener(record);
  }

  /** Tell onChange's listeners that `taskId` may have changed. */
  private announce(taskId: string): void {
    for (const listener of this.changes) listener(taskId);
  }

  /** A failed write is said on stderr: the run itself has ended either way. */
  private async guard(write: () => Promise<unknown>): Promise<void> {
    try {
      await write();
    } catch (error) {
      log('error', `tasks: ${(error as Error).message}`);
    }
  }
}
