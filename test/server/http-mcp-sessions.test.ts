// 2025-era MCP sessions over `serve --http`: an initialize opens one (Mcp-Session-Id), bound to its
// principal; approvals by elicitation and code mode's sampling reach the client through it; GET
// opens its stream, DELETE ends it; caps and idle expiry bound them; batches are refused; 2026-era
// requests are as they were. The real server, the SDK's client, and raw fetch for what a client
// library hides.
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectHttp, type HttpServer, startHttp } from '../helpers/http.js';
import { callTool, tempDir } from '../helpers/server.js';

const ALICE = 'alice-token-0123456789';
const BOB = 'bob-token-0123456789ab';
const dir = tempDir();
const tokens = join(dir, 'tokens.json');
writeFileSync(tokens, JSON.stringify({ alice: ALICE, bob: BOB }));
const servers: HttpServer[] = [];
afterAll(async () => {
  for (const server of servers) {
    await server.stop();
    rmSync(server.home, { recursive: true, force: true });
  }
  rmSync(dir, { recursive: true, force: true });
});

async function serve(env: Record<string, string> = {}): Promise<HttpServer> {
  const server = await startHttp({ env: { CODEXEC_HTTP_TOKENS: tokens, ...env } });
  servers.push(server);
  return server;
}

const headers = (token: string, extra: Record<string, string> = {}) => ({
  authorization: `Bearer ${token}`,
  'content-type': 'application/json',
  accept: 'application/json, text/event-stream',
  ...extra,
});
const INITIALIZE = JSON.stringify({
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
});
const PING = JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'ping' });

/** A raw initialize as `token`: its answer, and the session id it issued (null: none). */
async function initialize(url: string, token: string) {
  const response = await fetch(url, { method: 'POST', headers: headers(token), body: INITIALIZE });
  await response.body?.cancel();
  return { status: response.status, id: response.headers.get('mcp-session-id'), response };
}

const ping = (url: string, token: string, id: string) =>
  fetch(url, { method: 'POST', headers: headers(token, { 'mcp-session-id': id }), body: PING });

describe('2025-era MCP sessions over HTTP', () => {
  let server: HttpServer;
  beforeAll(async () => {
    server = await serve({ CODEXEC_APPROVAL: 'ask' });
  });

  it('asks a 2025-era client for approval by elicitation, and obeys its answer', async () => {
    const forms: string[] = [];
    let answer = 'deny';
    const client = await connectHttp(server.url, ALICE, 'legacy', (params) => {
      forms.push(params.message);
      return { action: 'accept', content: { decision: answer } };
    });
    try {
      const run = (code: string) =>
        callTool<{ success: boolean; stdout: string; code: string }>(client, 'execute_code', {
          language: 'python',
          code,
        });
      const denied = await run('print("denied")');
      expect(denied.value.code).toBe('APPROVAL_DENIED');
      answer = 'approve';
      const approved = await run('print(6 * 7)');
      expect(approved.value).toMatchObject({ success: true, stdout: '42\n' });
      expect(forms).toHaveLength(2);
      expect(forms[1]).toContain('print(6 * 7)');
    } finally {
      await client.close();
    }
  }, 60_000);

  it('keeps APPROVAL_UNAVAILABLE for a session whose client declared no elicitation, and a request without one', async () => {
    const client = await connectHttp(server.url, ALICE, 'legacy');
    try {
      const refused = await callTool<{ code: string; error: string }>(client, 'execute_code', {
        language: 'python',
        code: 'print(1)',
      });
      expect(refused.value.code).toBe('APPROVAL_UNAVAILABLE');
      expect(refused.value.error).toContain('declared no elicitation');
    } finally {
      await client.close();
    }
    const call = JSON.stringify({
      jsonrpc: '2.0',
      id: 3,
      method: 'tools/call',
      params: { name: 'execute_code', arguments: { language: 'python', code: 'print(1)' } },
    });
    const oneOff = await fetch(server.url, { method: 'POST', headers: headers(ALICE), body: call });
    expect(oneOff.headers.get('mcp-session-id')).toBeNull();
    const text = await oneOff.text();
    expect(text).toContain('APPROVAL_UNAVAILABLE');
    expect(text).toContain('without an MCP session');
  });

  it('issues an unguessable id bound to its principal: another principal gets what an unknown id gets', async () => {
    const { status, id } = await initialize(server.url, ALICE);
    expect(status).toBe(200);
    expect(id).toMatch(/^[A-Za-z0-9_-]{43}$/); // 256 random bits
    const second = await initialize(server.url, ALICE);
    expect(second.id).not.toBe(id);
    expect((await ping(server.url, ALICE, id ?? '')).status).toBe(200);
    const bobs = await ping(server.url, BOB, id ?? '');
    const unknown = await ping(server.url, BOB, 'x'.repeat(43));
    expect(bobs.status).toBe(404);
    expect(unknown.status).toBe(404);
    expect(await bobs.text()).toBe(await unknown.text());
    // Bob's DELETE and GET with it are as unknown, and leave it alive.
    for (const method of ['DELETE', 'GET']) {
      const response = await fetch(server.url, {
        method,
        headers: headers(BOB, { 'mcp-session-id': id ?? '' }),
      });
      expect(response.status, method).toBe(404);
    }
    expect((await ping(server.url, ALICE, id ?? '')).status).toBe(200);
  });

  it('opens the session stream on GET, one at a time, and ends the session on DELETE (404 after)', async () => {
    const { id } = await initialize(server.url, ALICE);
    const session = { 'mcp-session-id': id ?? '' };
    const stream = await fetch(server.url, { method: 'GET', headers: headers(ALICE, session) });
    expect(stream.status).toBe(200);
    expect(stream.headers.get('content-type')).toContain('text/event-stream');
    const again = await fetch(server.url, { method: 'GET', headers: headers(ALICE, session) });
    expect(again.status).toBe(409);
    await again.body?.cancel();
    const ended = await fetch(server.url, { method: 'DELETE', headers: headers(ALICE, session) });
    expect(ended.status).toBe(200);
    // The stream ends with the session.
    const reader = stream.body?.getReader();
    for (;;) if ((await reader?.read())?.done !== false) break;
    expect((await ping(server.url, ALICE, id ?? '')).status).toBe(404);
    expect((await fetch(server.url, { method: 'DELETE', headers: headers(ALICE, session) })).status).toBe(
      404,
    );
  });

  it('refuses a JSON-RPC batch in a session and without one as stdio does: -32600 for each request', async () => {
    const { id } = await initialize(server.url, ALICE);
    const list = { jsonrpc: '2.0', id: 'list', method: 'tools/list' };
    const notification = { jsonrpc: '2.0', method: 'notifications/initialized' };
    const batch = JSON.stringify([JSON.parse(PING), list, notification]);
    for (const session of [{ 'mcp-session-id': id ?? '' }, {}] as Record<string, string>[]) {
      const response = await fetch(server.url, {
        method: 'POST',
        headers: headers(ALICE, session),
        body: batch,
      });
      expect(response.status).toBe(400);
      // Nothing in it ran: the ping and tools/list are answered with the refusal alone.
      const answers = (await response.json()) as Array<{
        id: unknown;
        error: { code: number; message: string };
      }>;
      expect(answers.map((answer) => [answer.id, answer.error.code])).toEqual([
        [2, -32600],
        ['list', -32600],
      ]);
      expect(answers[0]?.error.message).toContain('batches are not supported');
    }
    const empty = await fetch(server.url, { method: 'POST', headers: headers(ALICE), body: '[]' });
    expect(await empty.json()).toMatchObject({ id: null, error: { code: -32600 } });
    expect((await ping(server.url, ALICE, id ?? '')).status).toBe(200); // the session goes on
  });

  it('leaves 2026-era requests as they were: no session id, GET and DELETE without one answer 405', async () => {
    const client = await connectHttp(server.url, ALICE, 'modern');
    const transport = (client as unknown as { transport?: StreamableHTTPClientTransport }).transport;
    try {
      expect(transport?.sessionId).toBeUndefined();
      expect((await client.listTools()).tools.length).toBeGreaterThan(0);
    } finally {
      await client.close();
    }
    for (const method of ['GET', 'DELETE'])
      expect((await fetch(server.url, { method, headers: headers(ALICE) })).status, method).toBe(405);
  });
});

describe('MCP session bounds', () => {
  it('caps sessions per principal (429) and in total (503), naming the setting', async () => {
    const server = await serve({
      CODEXEC_HTTP_MAX_MCP_SESSIONS_PER_PRINCIPAL: '2',
      CODEXEC_HTTP_MAX_MCP_SESSIONS: '3',
    });
    const first = await initialize(server.url, ALICE);
    await initialize(server.url, ALICE);
    const third = await initialize(server.url, ALICE);
    expect(third.status).toBe(429);
    expect(third.id).toBeNull();
    const refusal = await (
      await fetch(server.url, { method: 'POST', headers: headers(ALICE), body: INITIALIZE })
    ).text();
    expect(refusal).toContain('CODEXEC_HTTP_MAX_MCP_SESSIONS_PER_PRINCIPAL');
    // A flood of initializes at once passes the cap no more than one by one does.
    const flood = await Promise.all(Array.from({ length: 20 }, () => initialize(server.url, BOB)));
    expect(flood.filter((each) => each.status === 200)).toHaveLength(1);
    const total = await fetch(server.url, { method: 'POST', headers: headers(BOB), body: INITIALIZE });
    expect(total.status).toBe(503);
    expect(await total.text()).toContain('CODEXEC_HTTP_MAX_MCP_SESSIONS');
    // Ending one makes room.
    const session = { 'mcp-session-id': first.id ?? '' };
    expect((await fetch(server.url, { method: 'DELETE', headers: headers(ALICE, session) })).status).toBe(
      200,
    );
    expect((await initialize(server.url, ALICE)).status).toBe(200);
  });

  it('ends a session idle for CODEXEC_HTTP_MCP_SESSION_IDLE_MS, an open GET stream and all', async () => {
    const server = await serve({ CODEXEC_HTTP_MCP_SESSION_IDLE_MS: '1000' });
    const { id } = await initialize(server.url, ALICE);
    const session = { 'mcp-session-id': id ?? '' };
    const stream = await fetch(server.url, { method: 'GET', headers: headers(ALICE, session) });
    expect(stream.status).toBe(200);
    const reader = stream.body?.getReader();
    for (;;) if ((await reader?.read())?.done !== false) break; // ends when the session does
    expect((await ping(server.url, ALICE, id ?? '')).status).toBe(404);
    // Its place is free again for a new one.
    expect((await initialize(server.url, ALICE)).status).toBe(200);
  }, 30_000);

  it('keeps a session busy with a long call alive past the idle time', async () => {
    const server = await serve({ CODEXEC_HTTP_MCP_SESSION_IDLE_MS: '1000' });
    const client = await connectHttp(server.url, ALICE, 'legacy');
    try {
      const slow = await callTool<{ stdout: string }>(client, 'execute_code', {
        language: 'bash',
        code: 'sleep 2.5; echo done',
      });
      expect(slow.value.stdout).toBe('done\n');
      expect((await client.listTools()).tools.length).toBeGreaterThan(0);
    } finally {
      await client.close();
    }
  }, 30_000);
});

describe("code mode's sampling over a 2025-era HTTP session", () => {
  it("asks the client's model when the client declared sampling", async () => {
    const server = await serve();
    const asked: string[] = [];
    const transport = new StreamableHTTPClientTransport(new URL(server.url), {
      requestInit: { headers: { authorization: `Bearer ${ALICE}` } },
    });
    const client = new Client({ name: 'sampling-over-http', version: '1.0.0' }, {
      capabilities: { sampling: {} },
    } as never);
    client.setRequestHandler('sampling/createMessage', async (request) => {
      const text = (request.params as { messages: Array<{ content: { text: string } }> }).messages.at(-1)
        ?.content.text;
      asked.push(text ?? '');
      return {
        role: 'assistant',
        model: 'test',
        content: { type: 'text', text: `you said: ${text}` },
      } as never;
    });
    await client.connect(transport);
    try {
      const { value } = await callTool<{ stdout: string }>(client, 'execute_code', {
        language: 'python',
        code: 'print(await llm.ask("2+2?"))',
        enable_sampling: true,
      });
      expect(value.stdout).toBe('you said: 2+2?\n');
      expect(asked).toEqual(['2+2?']);
    } finally {
      await client.close();
    }
  }, 60_000);
});
