// The shipped deploy/haproxy.cfg, run by Debian's HAProxy in front of two real `serve --http`
// replicas: round robin, stickiness on Mcp-Session-Id (the request's and the one a server
// issues), unbuffered progress, and a dead replica's requests sent to the live one.
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  checkConfig,
  renderConfig,
  SHIPPED_CONFIG,
  startHaproxy,
  type TestHaproxy,
} from '../helpers/haproxy.js';
import { connectHttp, type HttpServer, rawHttp, startHttp } from '../helpers/http.js';
import { callTool, tempDir } from '../helpers/server.js';

const TOKEN = 'haproxy-test-token-0123456789';
/** Each replica gets its own run-slot count: `health` reports it, so it names who answered. */
const SLOTS = [7, 9] as const;

const hostPort = (url: string) => new URL(url).host;

describe('deploy/haproxy.cfg', () => {
  it('is valid for HAProxy 2.6 as shipped and as the tests render it', () => {
    expect(checkConfig(SHIPPED_CONFIG)).toContain('Configuration file is valid');
    const dir = tempDir();
    try {
      const file = join(dir, 'haproxy.cfg');
      const shipped = readFileSync(SHIPPED_CONFIG, 'utf8');
      const rendered = renderConfig(shipped, 18765, ['127.0.0.1:1', '127.0.0.1:2', '127.0.0.1:3']);
      expect(rendered.match(/^\s*server /gm)).toHaveLength(3);
      expect(rendered).toContain('bind 127.0.0.1:18765');
      // Everything but the bind and server lines is the shipped file's.
      const rest = (text: string) => text.split('\n').filter((line) => !/^\s*(bind|server)\s/.test(line));
      expect(rest(rendered)).toEqual(rest(shipped));
      writeFileSync(file, rendered);
      expect(checkConfig(file)).toContain('Configuration file is valid');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('HAProxy in front of two replicas', () => {
  let replicas: HttpServer[] = [];
  let proxy: TestHaproxy;
  beforeAll(async () => {
    replicas = await Promise.all(
      SLOTS.map((slots) =>
        startHttp({
          env: {
            CODEXEC_HTTP_TOKEN: TOKEN,
            CODEXEC_MAX_CONCURRENT_RUNS: String(slots),
            CODEXEC_HTTP_KEEP_ALIVE_TIMEOUT_MS: '65000',
            CODEXEC_HTTP_MAX_CONNECTIONS_PER_ADDRESS: '200',
          },
        }),
      ),
    );
    proxy = await startHaproxy(replicas.map((replica) => hostPort(replica.url)));
  }, 60_000);
  afterAll(async () => {
    await proxy?.stop();
    for (const replica of replicas) {
      await replica.stop();
      rmSync(replica.home, { recursive: true, force: true });
    }
  });

  /** A 2025-era MCP session opened through the proxy: its id. */
  async function rawInitialize(): Promise<string> {
    const head = [
      'POST /mcp HTTP/1.1',
      `host: ${hostPort(proxy.url)}`,
      `authorization: Bearer ${TOKEN}`,
      'content-type: application/json',
      'accept: application/json, text/event-stream',
    ];
    const body = JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
    });
    const response = await rawHttp(proxy.url, head, body);
    expect(response.status).toBe(200);
    const id = /mcp-session-id: (\S+)/i.exec(response.head)?.[1];
    if (!id) throw new Error(`no Mcp-Session-Id in ${response.head}`);
    return id;
  }

  /** Which replica (its slot count) answered a `health` call over a raw 2025-era POST. */
  async function rawHealth(sessionId?: string): Promise<number> {
    const head = [
      'POST /mcp HTTP/1.1',
      `host: ${hostPort(proxy.url)}`,
      `authorization: Bearer ${TOKEN}`,
      'content-type: application/json',
      'accept: application/json, text/event-stream',
      ...(sessionId ? [`mcp-session-id: ${sessionId}`] : []),
    ];
    const body = JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'tools/call',
      params: { name: 'health', arguments: {} },
    });
    const response = await rawHttp(proxy.url, head, body);
    expect(response.status).toBe(200);
    const max = /\\?"max\\?":(\d+)/.exec(response.body)?.[1];
    if (!max) throw new Error(`no health report in ${response.body.slice(0, 300)}`);
    return Number(max);
  }

  /** What answered six `health` calls of `client`, in order. */
  async function answering(client: Awaited<ReturnType<typeof connectHttp>>): Promise<number[]> {
    const answered: number[] = [];
    for (let i = 0; i < 6; i++) {
      const { value } = await callTool<{ runs: { max: number } }>(client, 'health', {});
      answered.push(value.runs.max);
    }
    return answered;
  }

  it('alternates requests between the replicas (modern era, SDK client)', async () => {
    const client = await connectHttp(proxy.url, TOKEN, 'modern');
    try {
      const answered = await answering(client);
      expect(new Set(answered)).toEqual(new Set(SLOTS));
      // Round robin: one request each in turn (the client sends nothing between two calls).
      for (let i = 1; i < answered.length; i++) expect(answered[i]).not.toBe(answered[i - 1]);
    } finally {
      await client.close();
    }
  });

  it("keeps a 2025-era client's MCP session on the replica that opened it (legacy era, SDK client)", async () => {
    // Each client's initialize is placed round robin; every later request (its GET stream too)
    // sticks to that replica by the Mcp-Session-Id it issued: another would answer 404.
    const clients = [
      await connectHttp(proxy.url, TOKEN, 'legacy'),
      await connectHttp(proxy.url, TOKEN, 'legacy'),
    ];
    try {
      const seen = await Promise.all(clients.map(answering));
      for (const answered of seen) expect(new Set(answered).size).toBe(1);
      expect(new Set(seen.map((answered) => answered[0]))).toEqual(new Set(SLOTS));
    } finally {
      for (const client of clients) await client.close();
    }
  });

  it('keeps a request carrying Mcp-Session-Id on one replica', async () => {
    const bySession = new Map<string, Set<number>>();
    // Three sessions over two replicas: plain round robin would send each id to both in turn
    // (and the replica that did not open it would answer 404).
    const ids = await Promise.all([1, 2, 3].map(() => rawInitialize()));
    for (let round = 0; round < 4; round++) {
      for (const id of ids) {
        const set = bySession.get(id) ?? new Set<number>();
        set.add(await rawHealth(id));
        bySession.set(id, set);
      }
    }
    for (const [, replicasSeen] of bySession) expect(replicasSeen.size).toBe(1);
    // New ids are placed round robin: the sessions are spread over both replicas.
    const placed = new Set([...bySession.values()].map((set) => [...set][0]));
    expect(placed).toEqual(new Set(SLOTS));
    // Without the header, the same raw request alternates.
    const free = [await rawHealth(), await rawHealth(), await rawHealth()];
    expect(new Set(free).size).toBe(2);
  });

  it('streams progress through the proxy while the code runs (no buffering)', async () => {
    const client = await connectHttp(proxy.url, TOKEN, 'modern');
    try {
      const messages: Array<{ message?: string; at: number }> = [];
      const { value } = await callTool<{ stdout: string }>(
        client,
        'execute_code',
        {
          language: 'python',
          code: 'import time\nprint("first", flush=True)\ntime.sleep(1.5)\nprint("last")',
        },
        { onprogress: (p) => messages.push({ message: p.message, at: Date.now() }) },
      );
      const finished = Date.now();
      expect(value.stdout).toBe('first\nlast\n');
      expect(messages[0]?.message).toContain('first');
      expect(messages[0]?.at).toBeLessThan(finished - 1000);
    } finally {
      await client.close();
    }
  });

  it('sends a stopped replica’s requests to the live one', async () => {
    const [, second] = replicas;
    await second?.stop();
    // Before the health check takes it out (3 failed checks, 2 s apart), a refused connection
    // is retried on the other replica (`retry-on conn-failure`, `option redispatch`).
    const client = await connectHttp(proxy.url, TOKEN, 'modern');
    try {
      for (let i = 0; i < 4; i++) {
        const { value } = await callTool<{ runs: { max: number } }>(client, 'health', {});
        expect(value.runs.max).toBe(SLOTS[0]);
      }
    } finally {
      await client.close();
    }
  });
});

describe('stickiness on an Mcp-Session-Id a server issues (2025-era sessionful servers)', () => {
  // Two small servers that issue ids naming themselves (codexec's are random) check the `stick
  // store-response` rule where the issuer can be read from the id.
  let stubs: Server[] = [];
  let proxy: TestHaproxy;
  beforeAll(async () => {
    stubs = await Promise.all(['one', 'two'].map((name) => sessionfulStub(name)));
    proxy = await startHaproxy(stubs.map((stub) => `127.0.0.1:${(stub.address() as AddressInfo).port}`));
  });
  afterAll(async () => {
    await proxy?.stop();
    await Promise.all(stubs.map((stub) => new Promise((resolve) => stub.close(resolve))));
  });

  it('sends every later request of a session to the server that issued its id', async () => {
    const issuers = new Set<string>();
    for (let i = 0; i < 4; i++) {
      const init = await fetch(proxy.url, { method: 'POST', body: '{}' });
      const id = init.headers.get('mcp-session-id');
      const issuer = await init.text();
      expect(id).toMatch(new RegExp(`^${issuer}-`));
      issuers.add(issuer);
      for (let j = 0; j < 3; j++) {
        const next = await fetch(proxy.url, {
          method: 'POST',
          body: '{}',
          headers: { 'mcp-session-id': id ?? '' },
        });
        expect(await next.text()).toBe(issuer);
      }
    }
    expect(issuers).toEqual(new Set(['one', 'two']));
  });
});

describe('client requests through deploy/haproxy.cfg', () => {
  let echo: Server;
  let proxy: TestHaproxy;
  beforeAll(async () => {
    // Answers each request with the headers it received.
    echo = createServer((req, res) => {
      req.resume();
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(req.url === '/healthz' ? '{"status":"ok"}' : JSON.stringify(req.headers));
    });
    await new Promise<void>((resolve) => echo.listen(0, '127.0.0.1', resolve));
    proxy = await startHaproxy([`127.0.0.1:${(echo.address() as AddressInfo).port}`]);
  });
  afterAll(async () => {
    await proxy?.stop();
    await new Promise((resolve) => echo?.close(resolve));
  });

  it('lose every x-codexec-replica-* header: a client never speaks as a replica', async () => {
    const answer = await fetch(proxy.url, {
      method: 'POST',
      headers: {
        'x-codexec-replica-principal': 'alice',
        'X-Codexec-Replica-Signature': 'f'.repeat(64),
        'x-codexec-replica-some-later-one': '1',
        'x-codexec-other': 'kept',
      },
      body: '{}',
    });
    const seen = (await answer.json()) as Record<string, string>;
    expect(seen['x-codexec-other']).toBe('kept');
    expect(Object.keys(seen).filter((name) => name.startsWith('x-codexec-replica-'))).toEqual([]);
  });
});

/** Answers /healthz, and issues `<name>-<n>` as Mcp-Session-Id to a POST that carries none. */
async function sessionfulStub(name: string): Promise<Server> {
  let issued = 0;
  const server = createServer((req, res) => {
    req.resume();
    if (req.url === '/healthz') return void res.end('{"status":"ok"}');
    const headers: Record<string, string> = { 'content-type': 'text/plain' };
    if (!req.headers['mcp-session-id']) headers['mcp-session-id'] = `${name}-${++issued}`;
    res.writeHead(200, headers);
    res.end(name);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return server;
}
