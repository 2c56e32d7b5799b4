// One principal's requests in flight at once are bounded (CODEXEC_HTTP_MAX_REQUESTS_PER_PRINCIPAL),
// whatever they are: alice holds her places with listens that follow no task and a 2025-era GET
// stream; her next request is refused 429 naming the setting, while bob is served. Her places come
// back as her requests end and as her clients go away. Loopback only; every stream is closed.
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type HttpServer, startHttp } from '../../helpers/http.js';
import { tempDir } from '../../helpers/server.js';
import { envelope, type HttpListen, listenOverHttp, until } from '../../helpers/tasks.js';

const ALICE = 'alice-requests-0123456789';
const BOB = 'bob-requests-0123456789ab';
const MAX = 4;

const headers = (token: string, extra: Record<string, string> = {}) => ({
  authorization: `Bearer ${token}`,
  'content-type': 'application/json',
  accept: 'application/json, text/event-stream',
  ...extra,
});

/** A 2026-era listen that follows no task: it lasts until its client goes away. */
const toolsListen = (id: string) => ({
  jsonrpc: '2.0' as const,
  id,
  method: 'subscriptions/listen',
  params: { notifications: { toolsListChanged: true }, _meta: envelope(false) },
});

describe('serve --http: requests in flight per principal', () => {
  let dir: string;
  let server: HttpServer;
  const open: HttpListen[] = [];
  beforeAll(async () => {
    dir = tempDir();
    const tokens = join(dir, 'tokens.json');
    writeFileSync(tokens, JSON.stringify({ alice: ALICE, bob: BOB }));
    server = await startHttp({
      env: { CODEXEC_HTTP_TOKENS: tokens, CODEXEC_HTTP_MAX_REQUESTS_PER_PRINCIPAL: String(MAX) },
    });
  });
  afterAll(async () => {
    for (const listen of open) listen.abort();
    await server?.stop();
    rmSync(dir, { recursive: true, force: true });
    if (server) rmSync(server.home, { recursive: true, force: true });
  });

  /** A 2026-era `health` call as `token`: its status and body. */
  const health = async (token: string) => {
    const body = JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'tools/call',
      params: { name: 'health', arguments: {}, _meta: envelope(false) },
    });
    const response = await fetch(server.url, {
      method: 'POST',
      headers: headers(token, {
        'mcp-protocol-version': '2026-07-28',
        'mcp-method': 'tools/call',
        'mcp-name': 'health',
      }),
      body,
    });
    return { status: response.status, body: await response.text() };
  };

  it('gives places back as requests end: more calls one after another than the bound', async () => {
    for (let index = 0; index < MAX * 2; index++) expect((await health(ALICE)).status).toBe(200);
  });

  it('refuses her next request at the bound, 429 naming the setting, and serves bob', async () => {
    // A 2025-era session's GET stream holds a place for as long as it is open.
    const init = await fetch(server.url, {
      method: 'POST',
      headers: headers(ALICE),
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: {
          protocolVersion: '2025-11-25',
          capabilities: {},
          clientInfo: { name: 'raw', version: '1' },
        },
      }),
    });
    await init.body?.cancel();
    const session = init.headers.get('mcp-session-id') as string;
    const stream = new AbortController();
    const get = await fetch(server.url, {
      method: 'GET',
      headers: headers(ALICE, { 'mcp-session-id': session }),
      signal: stream.signal,
    });
    expect(get.status).toBe(200);
    // The rest with listens that follow no task (each acknowledged, then silent).
    for (let index = 1; index < MAX; index++) {
      const listen = await listenOverHttp(server.url, ALICE, toolsListen(`l${index}`));
      expect(listen.status).toBe(200);
      await until(() => listen.messages.length > 0, `listen ${index} acknowledged`);
      open.push(listen);
    }

    const refused = await health(ALICE);
    expect(refused.status).toBe(429);
    expect(refused.body).toContain('CODEXEC_HTTP_MAX_REQUESTS_PER_PRINCIPAL');
    const over = await listenOverHttp(server.url, ALICE, toolsListen('over'));
    await over.ended;
    expect(over.status).toBe(429);
    expect((await health(BOB)).status).toBe(200);

    // Her clients go away: each place is given back as the server sees it go.
    stream.abort();
    for (const listen of open.splice(0)) listen.abort();
    // Everything given back: she holds the bound's worth of listens again.
    const deadline = Date.now() + 10_000;
    for (let index = 0; open.length < MAX; index++) {
      const listen = await listenOverHttp(server.url, ALICE, toolsListen(`again${index}`));
      await until(() => listen.messages.length > 0, `listen again ${index}`);
      if (listen.status === 200) open.push(listen);
      else expect(Date.now()).toBeLessThan(deadline);
    }
    expect(
      open.every((listen) => listen.messages[0]?.method === 'notifications/subscriptions/acknowledged'),
    ).toBe(true);
  });
});
