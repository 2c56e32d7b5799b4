import { SERVER_INFO_META_KEY } from '@modelcontextprotocol/server';
import type { TaskFeed } from './feed.js';
import { type ListenNotification, listenEnd, TaskListen } from './listen.js';
import type { ListenId } from './request.js';

/** How often an otherwise quiet stream says it is alive (the SDK's own interval). */
const KEEP_ALIVE_MS = 15_000;

export interface MergeOptions {
  readonly feed: TaskFeed;
  readonly principal: string;
  readonly id: ListenId;
  /** The task ids acknowledged. */
  readonly taskIds: readonly string[];
  /** Aborts when the client goes away. */
  readonly signal: AbortSignal;
  /** Told once, when the merged stream has ended (whichever way). */
  readonly closed: () => void;
}

type Json = Record<string, unknown>;

/**
 * One SSE stream for a listen: the SDK's (its acknowledgement, given the task ids acknowledged, then
 * its core notifications and keep-alives) and the tasks' notifications. The SDK ends its stream at
 * once when it honoured nothing of the core filter; its closing result is then held until the
 * tasks have ended too, and this side keeps the stream alive meanwhile. `end()` closes it
 * gracefully (the server is shutting down).
 */
export class MergedListen {
  readonly response: Response;
  private readonly reader: ReadableStreamDefaultReader<Uint8Array>;
  private readonly encoder = new TextEncoder();
  private controller: ReadableStreamDefaultController<Uint8Array> | undefined;
  private closed = false;
  private listen: TaskListen | undefined;
  /** The SDK's closing result, once it has sent it. */
  private held: string | undefined;
  private serverInfo: unknown;
  private coreEnded = false;
  private tasksEnded = false;
  private keepAlive: NodeJS.Timeout | undefined;

  constructor(
    sdk: Response,
    private readonly options: MergeOptions,
  ) {
    this.reader = (sdk.body as ReadableStream<Uint8Array>).getReader();
    const body = new ReadableStream<Uint8Array>({
      start: (controller) => {
        this.controller = controller;
        if (options.signal.aborted) return this.finish(false);
        options.signal.addEventListener('abort', this.abort, { once: true });
        this.pump().catch(this.abort);
      },
      cancel: () => this.finish(false),
    });
    this.response = new Response(body, { status: sdk.status, headers: sdk.headers });
  }

  /** End gracefully: the listen's result, then the end of the stream. */
  readonly end = (): void => this.finish(true);

  private readonly abort = (): void => this.finish(false);

  private async pump(): Promise<void> {
    const decoder = new TextDecoder();
    let buffer = '';
    for (;;) {
      const { done, value } = await this.reader.read();
      if (done) break;
      buffer += decoder.decode(value, { stream: true });
      for (let at = buffer.indexOf('\n\n'); at !== -1; at = buffer.indexOf('\n\n')) {
        this.frame(buffer.slice(0, at));
        buffer = buffer.slice(at + 2);
      }
    }
    // Ended without its result: the client went away, or the SDK cut it; so does this stream.
    if (this.held === undefined || this.listen === undefined) return this.finish(false);
    this.keepAlive = setInterval(() => this.write(': keepalive\n\n'), KEEP_ALIVE_MS).unref();
    this.settle();
  }

  /** One event of the SDK's stream: passed on, but for its acknowledgement and its end. */
  private frame(text: string): void {
    const message = dataOf(text);
    if (this.listen === undefined && message?.method === 'notifications/subscriptions/acknowledged') {
      const params = message.params as Json;
      const core = (params.notifications ?? {}) as Json;
      this.send({
        ...message,
        params: { ...params, notifications: { ...core, taskIds: this.options.taskIds } },
      });
      this.coreEnded = Object.keys(core).length === 0;
      this.listen = new TaskListen({
        ...this.options,
        notify: (notification) => this.send(notification),
        ended: () => {
          this.tasksEnded = true;
          this.settle();
        },
      });
      this.listen.start();
      return;
    }
    if (message !== undefined && message.id === this.options.id && 'result' in message) {
      this.held = `${text}\n\n`; // sent once the tasks have ended too
      this.serverInfo = ((message.result as Json)._meta as Json | undefined)?.[SERVER_INFO_META_KEY];
      this.coreEnded = true;
      return;
    }
    this.write(`${text}\n\n`);
  }

  private settle(): void {
    if (this.tasksEnded && this.coreEnded) this.finish(true);
  }

  private finish(graceful: boolean): void {
    if (this.closed) return;
    if (graceful) {
      const info = this.serverInfo === undefined ? {} : { [SERVER_INFO_META_KEY]: this.serverInfo };
      if (this.held !== undefined) this.write(this.held);
      else this.send(listenEnd(this.options.id, info));
    }
    this.closed = true;
    this.listen?.close();
    clearInterval(this.keepAlive);
    this.options.signal.removeEventListener('abort', this.abort);
    this.reader.cancel().catch(() => {});
    try {
      this.controller?.close();
    } catch {
      // cancelled by its reader already
    }
    this.options.closed();
  }

  private send(message: Json | ListenNotification): void {
    this.write(`event: message\ndata: ${JSON.stringify({ jsonrpc: '2.0', ...message })}\n\n`);
  }

  private write(text: string): void {
    if (!this.closed) this.controller?.enqueue(this.encoder.encode(text));
  }
}

/** The JSON message an SSE event carries, if any (a keep-alive carries none). */
function dataOf(text: string): Json | undefined {
  const line = text.split('\n').find((part) => part.startsWith('data:'));
  if (line === undefined) return undefined;
  try {
    return JSON.parse(line.slice(5)) as Json;
  } catch {
    return undefined;
  }
}
