import { BridgeError } from './errors.js';

// The bridge's bounded queue (100 calls running, 200 waiting, 30 s each): however many runs
// call at once, downstream servers see a bounded load, and a call that cannot get a turn fails
// with a clear error instead of waiting past its run.

export interface QueueOptions {
  readonly running: number;
  readonly waiting: number;
  readonly waitMs: number;
}

export const QUEUE_DEFAULTS: QueueOptions = { running: 100, waiting: 200, waitMs: 30_000 };

export class CallQueue {
  private active = 0;
  private readonly waiters: Array<() => void> = [];

  constructor(private readonly options: QueueOptions = QUEUE_DEFAULTS) {}

  /** Run `task` when a slot is free; QUEUE_FULL / QUEUE_TIMEOUT when none comes. */
  async run<T>(name: string, signal: AbortSignal, task: () => Promise<T>): Promise<T> {
    if (this.active >= this.options.running) await this.wait(name, signal);
    else this.active += 1;
    try {
      return await task();
    } finally {
      const next = this.waiters.shift();
      if (next)
        next(); // the slot passes straight to the next in line
      else this.active -= 1;
    }
  }

  private wait(name: string, signal: AbortSignal): Promise<void> {
    if (this.waiters.length >= this.options.waiting) {
      return Promise.reject(
        new BridgeError(
          'QUEUE_FULL',
          `${name}: ${this.options.running} calls are running and ${this.options.waiting} waiting, the most the bridge takes`,
        ),
      );
    }
    return new Promise<void>((resolve, reject) => {
      const leave = (error: BridgeError) => {
        const at = this.waiters.indexOf(turn);
        if (at !== -1) this.waiters.splice(at, 1);
        clearTimeout(timer);
        signal.removeEventListener('abort', aborted);
        reject(error);
      };
      const turn = () => {
        clearTimeout(timer);
        signal.removeEventListener('abort', aborted);
        resolve();
      };
      const timer = setTimeout(
        () =>
          leave(new BridgeError('QUEUE_TIMEOUT', `${name}: no turn within ${this.options.waitMs / 1000} s`)),
        this.options.waitMs,
      );
      const aborted = () =>
        leave(new BridgeError('CALL_ABORTED', `${name}: the run ended before the call did`));
      signal.addEventListener('abort', aborted, { once: true });
      this.waiters.push(turn);
    });
  }
}
