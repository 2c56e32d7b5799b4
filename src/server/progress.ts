import type { ServerContext } from '@modelcontextprotocol/server';
import type { OutputStream } from '../engine/index.js';
import { RunFeed } from './feed.js';
import { currentTaskRun } from './tasks.js';

const INTERVAL_MS = 100;
const MAX_PENDING_CHARS = 4000;

/**
 * Streams run output to the client as progress notifications, when it asked for them (a
 * progressToken). Output is coalesced and sent at most every 100 ms, at most 4,000 characters a
 * notification: a flood is summarized ("[... N characters not streamed ...]"), never queued.
 */
export class ProgressStreamer {
  private pending = '';
  private skipped = 0;
  private sent = 0;
  private timer: NodeJS.Timeout | undefined;
  private readonly token: string | number | undefined;

  constructor(private readonly ctx: ServerContext) {
    this.token = ctx.mcpReq._meta?.progressToken;
  }

  get enabled(): boolean {
    return this.token !== undefined;
  }

  readonly push = (stream: OutputStream, text: string): void => {
    if (this.token === undefined) return;
    const tagged = stream === 'stderr' ? `[stderr] ${text}` : text;
    const room = MAX_PENDING_CHARS - this.pending.length;
    if (room > 0) this.pending += tagged.slice(0, room);
    this.skipped += Math.max(0, tagged.length - Math.max(room, 0));
    this.timer ??= setTimeout(() => void this.flush(), INTERVAL_MS);
  };

  /**
   * Send what is pending now and stop the timer. When the run ends, await it: the last
   * notification must be out before the result, or the client drops it.
   */
  flush(): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    if (this.token === undefined || (this.pending === '' && this.skipped === 0)) return Promise.resolve();
    const note = this.skipped > 0 ? `\n[... ${this.skipped} characters not streamed ...]\n` : '';
    const message = this.pending + note;
    this.sent += message.length;
    this.pending = '';
    this.skipped = 0;
    return this.ctx.mcpReq
      .notify({
        method: 'notifications/progress',
        params: { progressToken: this.token, progress: this.sent, message },
      })
      .catch(() => {}); // the client went away; the result path reports that
  }
}

/**
 * Run `task` with output streamed as progress notifications when the client asked for them, and
 * the last notification sent before the result (or the failure) goes out.
 */
export async function withProgress<T>(
  ctx: ServerContext,
  task: (options: {
    signal: AbortSignal;
    onOutput?: (stream: OutputStream, text: string) => void;
  }) => Promise<T>,
): Promise<T> {
  // A run handed back as a task: cancelled by tasks/cancel, its output kept in the task record.
  // serve --http's dashboard: a tracked run's output goes to the feed as well.
  const watched = RunFeed.currentOutput();
  const run = currentTaskRun();
  if (run) return task({ signal: run.signal, onOutput: tee(run.onOutput, watched) });
  const progress = new ProgressStreamer(ctx);
  try {
    return await task({
      signal: ctx.mcpReq.signal,
      onOutput: tee(progress.enabled ? progress.push : undefined, watched),
    });
  } finally {
    await progress.flush();
  }
}

type OnOutput = (stream: OutputStream, text: string) => void;

function tee(first: OnOutput | undefined, second: OnOutput | undefined): OnOutput | undefined {
  if (!first || !second) return first ?? second;
  return (stream, text) => {
    first(stream, text);
    second(stream, text);
  };
}
