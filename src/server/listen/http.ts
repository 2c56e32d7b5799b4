import { ProtocolErrorCode } from '@modelcontextprotocol/server';
import type { Tasks } from '../../tasks/index.js';
import { TaskFeed } from './feed.js';
import { acknowledge, ListenCounts } from './listen.js';
import {
  type ListenError,
  type ListenId,
  MAX_TASK_LISTENS,
  readTaskListen,
  tooManyListens,
} from './request.js';
import { MergedListen } from './sse.js';

const LISTEN_METHOD = Buffer.from('subscriptions/listen');

/**
 * serve --http's listens for tasks. The SDK's handler serves subscriptions/listen as an SSE stream
 * and keeps only the core filter, so a listen naming `taskIds` is checked here (the extension
 * declared, bounds), handed to the SDK all the same, and its stream merged with the tasks' (sse.ts).
 * Listens are counted per principal; a task that runs on another replica is read from the shared
 * store (the feed polls it).
 */
export class HttpTaskListens {
  private readonly counts = new ListenCounts(MAX_TASK_LISTENS);
  /** The graceful end of each open listen, for close(). */
  private readonly open = new Set<() => void>();
  private readonly feed: TaskFeed;

  constructor(private readonly tasks: Tasks) {
    this.feed = new TaskFeed(tasks);
  }

  /** Whether `body` may be a listen (a look at its bytes before anything parses it). */
  claims(body: Buffer | undefined): body is Buffer {
    return body?.includes(LISTEN_METHOD) === true;
  }

  /**
   * Answer `body` for `principal`: a listen for tasks here, anything else (or a listen the SDK
   * refuses) by `answer`, the SDK's handler. `signal` aborts when the client goes away.
   */
  async serve(body: Buffer, principal: string, signal: AbortSignal, answer: () => Promise<Response>) {
    let message: unknown;
    try {
      message = JSON.parse(body.toString('utf8'));
    } catch {
      return answer(); // the SDK's parse error
    }
    const request = readTaskListen(message);
    if (request === undefined) return answer();
    if (request.kind === 'refused') return refusal(request.id, request.error);
    if (!this.counts.take(principal)) return refusal(request.id, tooManyListens('per principal'));
    let released = false;
    const release = () => {
      if (released) return;
      released = true;
      this.counts.release(principal);
    };
    try {
      const [response, taskIds] = await Promise.all([
        answer(),
        acknowledge(this.tasks, principal, request.taskIds),
      ]);
      if (!response.body || !response.headers.get('content-type')?.includes('text/event-stream')) {
        release();
        return response;
      }
      // `closed` may come before the constructor returns (the client already gone).
      let closed = false;
      let merged: MergedListen | undefined;
      merged = new MergedListen(response, {
        feed: this.feed,
        principal,
        id: request.id,
        taskIds,
        signal,
        closed: () => {
          closed = true;
          if (merged) this.open.delete(merged.end);
          release();
        },
      });
      if (!closed) this.open.add(merged.end);
      return merged.response;
    } catch (error) {
      release();
      throw error;
    }
  }

  /**
   * End every open listen gracefully (shutting down), once what was read of its tasks is sent: the
   * tasks this server ended as it stopped are told first.
   */
  async close(): Promise<void> {
    await this.feed.settled();
    for (const end of [...this.open]) end();
  }
}

/** A listen refused before it opened: the missing extension is a 400 (as the SDK answers it). */
function refusal(id: ListenId, error: ListenError): Response {
  return Response.json(
    { jsonrpc: '2.0', id, error },
    {
      status: error.code === ProtocolErrorCode.MissingRequiredClientCapability ? 400 : 200,
    },
  );
}
