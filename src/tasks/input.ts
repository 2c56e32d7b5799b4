import type { TaskStore } from './store.js';

/** How often answers given to another server sharing the store are looked for. */
const POLL_MS = 250;

interface Waiter {
  readonly answered: Promise<unknown>;
  readonly resolve: (value: unknown) => void;
}

/**
 * A running task's questions to its client (2026 era: the task reads input_required, tasks/get
 * shows the requests, tasks/update answers them). Requests and answers live in the store, so any
 * server sharing it shows the one and takes the other; the run asking here waits for its answer,
 * delivered at once when tasks/update reaches this server, else found by polling.
 */
export class TaskInput {
  /** taskId → key → the run waiting for that answer. */
  private readonly waiting = new Map<string, Map<string, Waiter>>();
  private poller: NodeJS.Timeout | undefined;
  private polling = false;
  /** Requests being written, per task (a read of the task waits for them: see `written`). */
  private readonly requesting = new Map<string, Promise<unknown>>();

  constructor(
    private readonly store: TaskStore,
    private readonly onError: (error: Error) => void,
    /** Told once a withdrawn request is recorded (the task may read working again). */
    private readonly onWithdrawn: (taskId: string) => void = () => {},
  ) {}

  /**
   * Ask `request` under `key` and wait for its answer. A key already asked is asked once: both
   * wait for the same answer. `signal` (the task's cancel, a timeout) withdraws the request and
   * rejects with its reason; so does a task that has already ended.
   */
  ask(taskId: string, key: string, request: unknown, signal: AbortSignal): Promise<unknown> {
    const keys = this.waiting.get(taskId) ?? new Map<string, Waiter>();
    const existing = keys.get(key);
    if (existing) return existing.answered;
    if (signal.aborted) return Promise.reject(signal.reason);
    let resolve: (value: unknown) => void = () => {};
    let reject: (reason: unknown) => void = () => {};
    const answered = new Promise<unknown>((yes, no) => {
      resolve = yes;
      reject = no;
    });
    const settle = () => {
      signal.removeEventListener('abort', onAbort);
      keys.delete(key);
      if (keys.size === 0) this.waiting.delete(taskId);
      if (this.waiting.size === 0) this.stopPolling();
    };
    const onAbort = () => {
      settle();
      void this.guard(() => this.store.withdrawInput(taskId, key)).then(() => this.onWithdrawn(taskId));
      reject(signal.reason);
    };
    // Called now (the SQLite store records it before this returns: a re-read shows it).
    const requested = this.store.requestInput(taskId, key, request);
    this.requesting.set(taskId, requested);
    const written = () => {
      if (this.requesting.get(taskId) === requested) this.requesting.delete(taskId);
    };
    signal.addEventListener('abort', onAbort, { once: true });
    keys.set(key, {
      answered,
      resolve: (value) => {
        settle();
        resolve(value);
      },
    });
    this.waiting.set(taskId, keys);
    this.poller ??= setInterval(() => void this.deliverAll(), POLL_MS).unref();
    requested.then(
      (asked) => {
        written();
        if (asked) return;
        settle();
        reject(new Error(`task ${taskId} has ended`));
      },
      (error: Error) => {
        written();
        settle();
        reject(error);
      },
    );
    return answered;
  }

  /** Once the request last asked for `taskId` is recorded (a read after it shows it). */
  async written(taskId: string): Promise<void> {
    await this.requesting.get(taskId)?.catch(() => {});
  }

  /** Hand the answers kept for `taskId` to the runs waiting for them here. */
  async deliver(taskId: string): Promise<void> {
    if (!this.waiting.has(taskId)) return;
    let answers: Record<string, unknown> = {};
    await this.guard(async () => {
      answers = await this.store.takeResponses(taskId);
    });
    const keys = this.waiting.get(taskId);
    for (const [key, value] of Object.entries(answers)) keys?.get(key)?.resolve(value);
  }

  private async deliverAll(): Promise<void> {
    if (this.polling) return; // the last look has not come back yet
    this.polling = true;
    try {
      await Promise.all([...this.waiting.keys()].map((taskId) => this.deliver(taskId)));
    } finally {
      this.polling = false;
    }
  }

  private stopPolling(): void {
    clearInterval(this.poller);
    this.poller = undefined;
  }

  private async guard(write: () => Promise<unknown>): Promise<void> {
    try {
      await write();
    } catch (error) {
      this.onError(error as Error);
    }
  }
}
