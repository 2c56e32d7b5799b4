import type { TaskStore } from './store.js';

/** How often answers given to another server sharing the home are looked for. */
const POLL_MS = 250;

interface Waiter {
  readonly answered: Promise<unknown>;
  readonly resolve: (value: unknown) => void;
}

/**
 * A running task's questions to its client (2026 era: the task reads input_required, tasks/get
 * shows the requests, tasks/update answers them). Requests and answers live in the store, so any
 * server sharing the home shows the one and takes the other; the run asking here waits for its
 * answer, delivered at once when tasks/update reaches this server, else found by polling.
 */
export class TaskInput {
  /** taskId → key → the run waiting for that answer. */
  private readonly waiting = new Map<string, Map<string, Waiter>>();
  private poller: NodeJS.Timeout | undefined;

  constructor(
    private readonly store: TaskStore,
    private readonly onError: (error: Error) => void,
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
    if (!this.store.requestInput(taskId, key, request))
      return Promise.reject(new Error(`task ${taskId} has ended`));
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
      this.guard(() => this.store.withdrawInput(taskId, key));
      reject(signal.reason);
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
    this.poller ??= setInterval(() => this.deliverAll(), POLL_MS).unref();
    return answered;
  }

  /** Hand the answers kept for `taskId` to the runs waiting for them here. */
  deliver(taskId: string): void {
    const keys = this.waiting.get(taskId);
    if (!keys) return;
    let answers: Record<string, unknown> = {};
    this.guard(() => {
      answers = this.store.takeResponses(taskId);
    });
    for (const [key, value] of Object.entries(answers)) keys.get(key)?.resolve(value);
  }

  private deliverAll(): void {
    for (const taskId of [...this.waiting.keys()]) this.deliver(taskId);
  }

  private stopPolling(): void {
    clearInterval(this.poller);
    this.poller = undefined;
  }

  private guard(write: () => unknown): void {
    try {
      write();
    } catch (error) {
      this.onError(error as Error);
    }
  }
}
