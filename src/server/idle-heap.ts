import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { log } from '../util/index.js';

/** How long a stdio server goes without a message in or out before it collects its garbage. */
export const IDLE_COLLECT_MS = 2000;

/**
 * A stdio server spends most of its life waiting for its client: once a burst of calls is over
 * (IDLE_COLLECT_MS without a message), it collects its garbage in full, once. V8's memory reducer,
 * which shrinks the heap and gives its pages back some seconds after a full collection, is armed
 * only by one: a server that answered a few calls had often made none, and held ~4 MB more for
 * good, at random (bench/idle-rss.mjs). A busy server is never idle that long, and pays one counter
 * per message.
 */
export class IdleHeap {
  private activity = 0;
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly idleMs = IDLE_COLLECT_MS) {}

  /** A message came in or went out. */
  touch(): void {
    this.activity++;
    if (!this.timer) this.arm();
  }

  stop(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
  }

  private arm(): void {
    const seen = this.activity;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      if (this.activity !== seen) this.arm();
      else collect();
    }, this.idleMs).unref();
  }
}

/**
 * A full collection, by V8's `gc`, exposed to a throwaway context only (the program never has it)
 * and let go with it: a context kept for it would hold ~140 KB.
 */
function collect(): void {
  setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc') as () => void;
  setFlagsFromString('--no-expose-gc');
  const before = process.memoryUsage();
  gc();
  const after = process.memoryUsage();
  const mb = (bytes: number) => (bytes / 2 ** 20).toFixed(1);
  log(
    'debug',
    `idle: heap collected, ${mb(before.heapUsed)} → ${mb(after.heapUsed)} MB used, rss ${mb(after.rss)} MB`,
  );
}
