import { CodexecError } from '../errors/index.js';

/** Gives a run slot back; a second call does nothing. */
export type Release = () => void;

export interface SlotLimits {
  /** CODEXEC_MAX_CONCURRENT_RUNS: runs at once, server-wide. */
  readonly running: number;
  /** CODEXEC_MAX_QUEUED_RUNS: calls that may wait for a slot (0: none wait). */
  readonly queued: number;
  /** CODEXEC_QUEUE_TIMEOUT_MS: how long one may wait. */
  readonly waitMs: number;
}

interface Waiter {
  readonly grant: (release: Release) => void;
  readonly fail: (error: CodexecError) => void;
}

/**
 * CODEXEC_MAX_CONCURRENT_RUNS for the whole server, all connections and principals together.
 * Every tool that runs code takes a slot through the Gatekeeper for as long as its run lasts
 * (warm-pool refills and idle session drivers take none). Past the limit a call waits in a
 * bounded FIFO for a bounded time, then is refused LIMIT_REACHED; a cancelled call leaves the
 * line. A free slot costs a counter and a closure: no timer, no promise.
 */
export class RunSlots {
  private running = 0;
  /** Waiting calls in arrival order; a Set so one that times out or is cancelled leaves in O(1). */
  private readonly waiting = new Set<Waiter>();
  private closed = false;

  constructor(private readonly limits: SlotLimits) {}

  /** Runs holding a slot now, calls waiting for one, and the limit (for health). */
  status(): { readonly running: number; readonly queued: number; readonly max: number } {
    return { running: this.running, queued: this.waiting.size, max: this.limits.running };
  }

  /** A slot now when one is free (and nobody waits before us), else a promise of one. */
  acquire(signal?: AbortSignal): Release | Promise<Release> {
    if (this.closed) throw shuttingDown();
    if (this.running < this.limits.running && this.waiting.size === 0) {
      this.running += 1;
      return this.releaser();
    }
    const { running, queued, waitMs } = this.limits;
    if (this.waiting.size >= queued) {
      throw new CodexecError(
        'LIMIT_REACHED',
        `the server is busy: ${running} runs are running (CODEXEC_MAX_CONCURRENT_RUNS) and ${queued} more are ` +
          'waiting for a slot, the most that may wait (CODEXEC_MAX_QUEUED_RUNS). Nothing ran; try again shortly',
      );
    }
    if (signal?.aborted) throw cancelled();
    return new Promise<Release>((resolve, reject) => {
      const leave = (error: CodexecError) => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        this.waiting.delete(waiter);
        reject(error);
      };
      const waiter: Waiter = {
        grant: (release) => {
          clearTimeout(timer);
          signal?.removeEventListener('abort', onAbort);
          resolve(release);
        },
        fail: leave,
      };
      const onAbort = () => leave(cancelled());
      const timer = setTimeout(
        () =>
          leave(
            new CodexecError(
              'LIMIT_REACHED',
              `the server is busy: all ${running} run slots (CODEXEC_MAX_CONCURRENT_RUNS) stayed taken for ` +
                `${waitMs} ms, the longest a call waits (CODEXEC_QUEUE_TIMEOUT_MS). Nothing ran; try again shortly`,
            ),
          ),
        waitMs,
      );
      signal?.addEventListener('abort', onAbort, { once: true });
      this.waiting.add(waiter);
    });
  }

  /** Refuse every waiting call and every later one: the server is stopping. */
  close(): void {
    this.closed = true;
    for (const waiter of [...this.waiting]) waiter.fail(shuttingDown());
  }

  private releaser(): Release {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const next = this.waiting.values().next();
      if (next.done) {
        this.running -= 1;
        return;
      }
      // Handed straight to the first in line: a newcomer cannot take it in between.
      this.waiting.delete(next.value);
      next.value.grant(this.releaser());
    };
  }
}

function shuttingDown(): CodexecError {
  return new CodexecError('LIMIT_REACHED', 'the server is shutting down; nothing ran');
}

function cancelled(): CodexecError {
  return new CodexecError(
    'LIMIT_REACHED',
    'the call was cancelled while it waited for a run slot; nothing ran',
  );
}
