import { ProtocolErrorCode } from '@modelcontextprotocol/server';
import type { Tasks } from '../../tasks/index.js';
import { TaskFeed } from './feed.js';
import { acknowledge, ListenCounts } from './listen.js';
import {
  type ListenError,
  type ListenId,
  listenId,
  MAX_TASK_LISTENS,
  readTaskListen,
  tooManyListens,
} from './request.js';
import { MergedListen } from './sse.js';

const LISTEN = Buffer.from('listen');
const ESCAPE = Buffer.from('\\u');

/**
 * serve --http's listens. The SDK's handler serves subscriptions/listen as an SSE stream and keeps
 * only the core filter, so a listen naming `taskIds` is checked here (the extension declared,
 * bounds), handed to the SDK all the same, and its stream merged with the tasks' (sse.ts). Every
 * listen is counted against its principal's MAX_TASK_LISTENS until its stream ends, whatever it
 * follows: one that follows no task lasts as long as its client likes. A task that runs on another
 * replica is read from the shared store (the feed polls it).
 */
export class HttpTaskListens {
  private readonly counts = new ListenCounts(MAX_TASK_LISTENS);
  /** The graceful end of each open listen, for close(). */
  private readonly open = new Set<() => void>();
  private readonly feed: TaskFeed;

  constructor(private readonly tasks: Tasks) {
    this.feed = new TaskFeed(tasks);
  }

  /**
   * Whether `body` may be a listen (a look at its bytes before anything parses it). JSON may spell
   * the method with escapes (`subscriptions\/listen`, `\u006c…`): a body with any is looked at too.
   */
  claims(body: Buffer | undefined): body is Buffer {
    return body !== undefined && (body.includes(LISTEN) || body.includes(ESCAPE));
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
    if (request === undefined) return this.counted(message, principal, signal, answer);
    if (request.kind === 'refused') return refusal(request.id, request.error);
    if (!this.counts.take(principal)) return refusal(request.id, TOO_MANY);
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
   * A listen that names no tasks (or any other message): the SDK's answer, a listen's stream
   * holding one of its principal's places until it ends, its client goes away or it is refused.
   */
  private async counted(
    message: unknown,
    principal: string,
    signal: AbortSignal,
    answer: () => Promise<Response>,
  ) {
    const id = listenId(message);
    if (id === undefined) return answer();
    if (!this.counts.take(principal)) return refusal(id, TOO_MANY);
    let released = false;
    const release = () => {
      if (released) return;
      released = true;
      signal.removeEventListener('abort', release);
      this.counts.release(principal);
    };
    signal.addEventListener('abort', release, { once: true });
    try {
      return untilEnded(await answer(), release);
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

const TOO_MANY = tooManyListens('listens (whatever they follow)', 'per principal');

/** `response`, calling `release` once its body has ended, failed or been cancelled (or at once: none). */
function untilEnded(response: Response, release: () => void): Response {
  if (!response.body) {
    release();
    return response;
  }
  const reader = response.body.getReader();
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        const { done, value } = await reader.read();
        if (!done) return controller.enqueue(value);
        release();
        controller.close();
      } catch (error) {
        release();
        controller.error(error);
      }
    },
    cancel(reason) {
      release();
      return reader.cancel(reason);
    },
  });
  return new Response(body, { status: response.status, headers: response.headers });
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
