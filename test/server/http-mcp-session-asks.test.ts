// What a 2025-era session asks its client (the approval form, code mode's llm.ask, a task's form)
// goes on the stream of the request it belongs to: a raw client that never opens the optional GET
// stream is asked, and its answer is obeyed. The real server over HTTP, raw fetch.
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type HttpServer, startHttp } from '../helpers/http.js';
import { tempDir } from '../helpers/server.js';

const ALICE = 'alice-token-0123456789';
const dir = tempDir();
const tokens = join(dir, 'tokens.json');
writeFileSync(tokens, JSON.stringify({ alice: ALICE }));
let server: HttpServer;
beforeAll(async () => {
  server = await startHttp({ env: { CODEXEC_HTTP_TOKENS: tokens, CODEXEC_APPROVAL: 'ask' } });
});
afterAll(async () => {
  await server.stop();
  rmSync(server.home, { recursive: true, force: true });
  rmSync(dir, { recursive: true, force: true });
});

type Message = { id?: number | string; method?: string; params?: Record<string, unknown>; result?: unknown };

const post = (sid: string | null, message: object) =>
  fetch(server.url, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${ALICE}`,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': '2025-11-25',
      ...(sid !== null && { 'mcp-session-id': sid }),
    },
    body: JSON.stringify({ jsonrpc: '2.0', ...message }),
  });

/** A session whose client declared `capabilities` and never opens its GET stream: its id. */
async function session(capabilities: object): Promise<string> {
  const params = { protocolVersion: '2025-11-25', capabilities, clientInfo: { name: 'raw', version: '1' } };
  const opened = await post(null, { id: 0, method: 'initialize', params });
  await opened.body?.cancel();
  const sid = opened.headers.get('mcp-session-id') ?? '';
  await (await post(sid, { method: 'notifications/initialized' })).body?.cancel();
  return sid;
}

/** The JSON-RPC messages of an SSE answer, as they arrive. */
async function* messages(response: Response): AsyncGenerator<Message> {
  const decoder = new TextDecoder();
  let buffered = '';
  for await (const chunk of response.body ?? []) {
    buffered += decoder.decode(chunk as Uint8Array, { stream: true });
    for (let end = buffered.indexOf('\n\n'); end >= 0; end = buffered.indexOf('\n\n')) {
      const data = buffered
        .slice(0, end)
        .split('\n')
        .filter((line) => line.startsWith('data:'));
      buffered = buffered.slice(end + 2);
      for (const line of data) yield JSON.parse(line.slice(5)) as Message;
    }
  }
}

/**
 * Send a request in session `sid` and read its stream: each request the server asks there is
 * answered with `answer` (POSTed back in the session) and kept; ends with the request's result.
 */
async function exchange(sid: string, request: Message, answer: (asked: Message) => object) {
  const asked: Message[] = [];
  for await (const message of messages(await post(sid, request))) {
    if (message.method !== undefined && message.id !== undefined) {
      asked.push(message);
      const answered = await post(sid, { id: message.id, result: answer(message) });
      expect(answered.status).toBe(202);
    } else if (message.id === request.id) return { result: message.result as Record<string, unknown>, asked };
  }
  throw new Error('the stream ended without the result');
}

const call = (id: number, args: object, task?: object) => ({
  id,
  method: 'tools/call',
  params: { name: 'execute_code', arguments: args, ...(task && { task }) },
});
const structured = (result: Record<string, unknown>) => result.structuredContent as Record<string, unknown>;

describe('2025-era session requests on the stream of the request they belong to', () => {
  it("asks for approval on the call's stream, and obeys the answer", async () => {
    const sid = await session({ elicitation: { form: {} } });
    let decision = 'deny';
    const answer = () => ({ action: 'accept', content: { decision } });
    const denied = await exchange(sid, call(1, { language: 'bash', code: 'echo denied' }), answer);
    expect(denied.asked.map((each) => each.method)).toEqual(['elicitation/create']);
    expect(structured(denied.result).code).toBe('APPROVAL_DENIED');
    decision = 'approve';
    const approved = await exchange(sid, call(2, { language: 'bash', code: 'echo $((6 * 7))' }), answer);
    expect(String(approved.asked[0]?.params?.message)).toContain('echo $((6 * 7))');
    expect(structured(approved.result)).toMatchObject({ success: true, stdout: '42\n' });
  }, 60_000);

  it("asks the client's model for llm.ask on the call's stream", async () => {
    const sid = await session({ elicitation: { form: {} }, sampling: {} });
    const code = 'print(await llm.ask("2+2?"))';
    const { result, asked } = await exchange(
      sid,
      call(1, { language: 'python', code, enable_sampling: true }),
      (message) =>
        message.method === 'elicitation/create'
          ? { action: 'accept', content: { decision: 'approve' } }
          : { role: 'assistant', model: 'test', content: { type: 'text', text: 'four' } },
    );
    expect(asked.map((each) => each.method)).toEqual(['elicitation/create', 'sampling/createMessage']);
    expect(structured(result)).toMatchObject({ success: true, stdout: 'four\n' });
  }, 60_000);

  it("sends a 2025 task's approval on tasks/result's stream, tagged with the task", async () => {
    const sid = await session({ elicitation: { form: {} } });
    const started = await exchange(
      sid,
      call(1, { language: 'bash', code: 'echo tasked' }, { ttl: 60_000 }),
      () => {
        throw new Error('a task asks through tasks/result, not on its call');
      },
    );
    const { taskId } = started.result.task as { taskId: string };
    const fetched = await exchange(sid, { id: 2, method: 'tasks/result', params: { taskId } }, () => ({
      action: 'accept',
      content: { decision: 'approve' },
    }));
    expect(fetched.asked.map((each) => each.method)).toEqual(['elicitation/create']);
    const meta = fetched.asked[0]?.params?._meta as Record<string, unknown>;
    expect(meta['io.modelcontextprotocol/related-task']).toEqual({ taskId });
    expect(structured(fetched.result)).toMatchObject({ success: true, stdout: 'tasked\n' });
  }, 60_000);
});
