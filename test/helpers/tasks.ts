// MCP Tasks (2026-07-28 extension) spoken raw: the SDK client rejects `resultType: "task"` (its
// codec knows only complete and input_required), and @modelcontextprotocol/ext-tasks needs a raw
// dispatcher for this era too. So tests frame the requests themselves, over stdio or HTTP.
import { request } from 'node:http';
import type { RawServer } from './raw.js';

export const TASKS_EXTENSION = 'io.modelcontextprotocol/tasks';
export const OUTPUT_META = 'io.github.codexec/output';

/**
 * The per-request envelope; with `tasks`, the client declares the Tasks extension (and form
 * elicitation, so that a server asking for approval can ask it) and the `extensions` given.
 */
export function envelope(tasks = true, extensions: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    'io.modelcontextprotocol/protocolVersion': '2026-07-28',
    'io.modelcontextprotocol/clientInfo': { name: 'tasks-test', version: '1' },
    'io.modelcontextprotocol/clientCapabilities': tasks
      ? { elicitation: { form: {} }, extensions: { [TASKS_EXTENSION]: {}, ...extensions } }
      : {},
  };
}

/** A JSON-RPC response: `result` or `error`. */
export interface Reply {
  readonly result?: Record<string, unknown>;
  readonly error?: { code: number; message: string; data?: unknown };
}

export type Send = (method: string, params: Record<string, unknown>, tasks?: boolean) => Promise<Reply>;

let next = 0;

/** Requests on a raw stdio server (discover() it first). */
export function overStdio(server: RawServer): Send {
  return async (method, params, tasks = true) =>
    (await server.request(`t${++next}`, method, { ...params, _meta: envelope(tasks) })) as Reply;
}

/**
 * Requests to serve --http, each a POST with the 2026 headers (Mcp-Name: the tool or the task), and
 * each on a TCP connection of its own (no keep-alive agent): no request shares the one before's.
 * `extensions`: more the client declares with the Tasks extension (MCP Apps).
 */
export function overHttp(url: string, token: string, extensions?: Record<string, unknown>): Send {
  return async (method, params, tasks = true) => {
    const id = `h${++next}`;
    const name = method === 'tools/call' ? params.name : params.taskId;
    const body = JSON.stringify({
      jsonrpc: '2.0',
      id,
      method,
      params: { ...params, _meta: envelope(tasks, extensions) },
    });
    const { status, type, text } = await new Promise<{ status: number; type: string; text: string }>(
      (resolve, reject) => {
        const req = request(
          url,
          {
            method: 'POST',
            agent: false,
            headers: modernHeaders(token, method, typeof name === 'string' ? name : undefined),
          },
          (res) => {
            let text = '';
            res.setEncoding('utf8');
            res.on('data', (chunk: string) => {
              text += chunk;
            });
            res.on('end', () =>
              resolve({ status: res.statusCode ?? 0, type: res.headers['content-type'] ?? '', text }),
            );
            res.on('error', reject);
          },
        );
        req.on('error', reject);
        req.end(body);
      },
    );
    const messages = type.includes('text/event-stream')
      ? text
          .split('\n')
          .filter((line) => line.startsWith('data:'))
          .map((line) => JSON.parse(line.slice(5)) as Record<string, unknown>)
      : [JSON.parse(text) as Record<string, unknown>];
    const reply = messages.find((message) => message.id === id);
    if (!reply) throw new Error(`no reply to ${method} (HTTP ${status}): ${text.slice(0, 500)}`);
    return reply as Reply;
  };
}

/** Poll tasks/get until the task leaves `working` (or `ms` pass), returning the last answer. */
export async function pollUntilDone(send: Send, taskId: string, ms = 30_000): Promise<Reply> {
  const until = Date.now() + ms;
  for (;;) {
    const reply = await send('tasks/get', { taskId });
    if (reply.result?.status !== 'working' || Date.now() > until) return reply;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** Poll until `check` holds for a tasks/get answer (or throw after `ms`). */
export async function pollFor(
  send: Send,
  taskId: string,
  check: (reply: Reply) => boolean,
  ms = 15_000,
): Promise<Reply> {
  const until = Date.now() + ms;
  for (;;) {
    const reply = await send('tasks/get', { taskId });
    if (check(reply)) return reply;
    if (Date.now() > until) throw new Error(`task ${taskId} never got there: ${JSON.stringify(reply)}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

export const SUBSCRIPTION_ID = 'io.modelcontextprotocol/subscriptionId';

/** A JSON-RPC message as a listen's stream carries it. */
export interface Message {
  readonly id?: string | number;
  readonly method?: string;
  readonly params?: Record<string, unknown>;
  readonly result?: Record<string, unknown>;
  readonly error?: { code: number; message: string; data?: unknown };
}

/** A subscriptions/listen request naming `taskIds` (and any core `filter` fields). */
export function listenRequest(
  id: string | number,
  taskIds: unknown,
  { tasks = true, filter = {} }: { tasks?: boolean; filter?: Record<string, unknown> } = {},
): Message & { jsonrpc: '2.0' } {
  return {
    jsonrpc: '2.0',
    id,
    method: 'subscriptions/listen',
    params: { notifications: { ...filter, taskIds }, _meta: envelope(tasks) },
  };
}

/** The messages of listen `id` among `messages`: those tagged with it, and its response. */
export function ofListen(messages: readonly unknown[], id: string | number): Message[] {
  return (messages as Message[]).filter(
    (message) =>
      (message.method !== undefined &&
        message.params?._meta !== undefined &&
        (message.params._meta as Record<string, unknown>)[SUBSCRIPTION_ID] === id) ||
      (message.method === undefined && message.id === id),
  );
}

/** The statuses a listen's notifications/tasks told, in order. */
export function toldStatuses(messages: readonly Message[], taskId?: string): string[] {
  return messages
    .filter((message) => message.method === 'notifications/tasks')
    .filter((message) => taskId === undefined || message.params?.taskId === taskId)
    .map((message) => message.params?.status as string);
}

/** Wait until `check` holds, looking every 50 ms (or throw after `ms`, saying `what`). */
export async function until(check: () => boolean, what: string, ms = 20_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** An open subscriptions/listen over HTTP: its SSE messages as they come, until it ends. */
export interface HttpListen {
  readonly status: number;
  readonly messages: Message[];
  /** Settles once the server has ended the stream (or it broke). */
  readonly ended: Promise<void>;
  /** Whether the stream has ended. */
  done(): boolean;
  /** Go away mid-stream (the TCP connection is destroyed). */
  abort(): void;
}

/** A 2026-era POST's headers: the token, the era, and the method (and tool) it names. */
function modernHeaders(token: string, method: string, name?: string): Record<string, string> {
  return {
    authorization: `Bearer ${token}`,
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
    'mcp-protocol-version': '2026-07-28',
    'mcp-method': method,
    ...(name !== undefined && { 'mcp-name': name }),
  };
}

/** POST a listen to serve --http and read its answer as it streams (a JSON error ends it at once). */
export function listenOverHttp(url: string, token: string, body: Message): Promise<HttpListen> {
  return new Promise((resolve, reject) => {
    const messages: Message[] = [];
    let finished = false;
    let text = '';
    const req = request(
      url,
      {
        method: 'POST',
        agent: false,
        headers: modernHeaders(token, 'subscriptions/listen'),
      },
      (res) => {
        const stream = (res.headers['content-type'] ?? '').includes('text/event-stream');
        res.setEncoding('utf8');
        const ended = new Promise<void>((done) => {
          const end = () => {
            if (!stream && text !== '') messages.push(JSON.parse(text) as Message);
            finished = true;
            done();
          };
          res.on('end', end);
          res.on('close', end);
          res.on('error', end);
        });
        res.on('data', (chunk: string) => {
          text += chunk;
          if (!stream) return;
          for (let at = text.indexOf('\n\n'); at !== -1; at = text.indexOf('\n\n')) {
            const data = text
              .slice(0, at)
              .split('\n')
              .find((line) => line.startsWith('data:'));
            text = text.slice(at + 2);
            if (data) messages.push(JSON.parse(data.slice(5)) as Message);
          }
        });
        resolve({
          status: res.statusCode ?? 0,
          messages,
          ended,
          done: () => finished,
          abort: () => req.destroy(),
        });
      },
    );
    req.on('error', (error) => {
      if (!finished) reject(error);
    });
    req.end(JSON.stringify(body));
  });
}
