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
            headers: {
              authorization: `Bearer ${token}`,
              'content-type': 'application/json',
              accept: 'application/json, text/event-stream',
              'mcp-protocol-version': '2026-07-28',
              'mcp-method': method,
              ...(typeof name === 'string' && { 'mcp-name': name }),
            },
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
