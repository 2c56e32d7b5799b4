// serve --http's connection bounds (issue #37): a cap on open connections, a time limit on request
// heads (slowloris) and on idle keep-alive connections, and cheap calls that still answer while an
// attacker holds hundreds of sockets. Every socket is on 127.0.0.1 and closed at the end.
import { once } from 'node:events';
import { rmSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { connect, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { type HttpServer, startHttp } from '../../helpers/http.js';

const servers: HttpServer[] = [];
const sockets: Socket[] = [];
const timers: NodeJS.Timeout[] = [];
afterEach(async () => {
  for (const timer of timers.splice(0)) clearInterval(timer);
  for (const socket of sockets.splice(0)) socket.destroy();
  for (const server of servers.splice(0)) {
    await server.stop();
    rmSync(server.home, { recursive: true, force: true });
  }
});

async function serve(env: Record<string, string> = {}): Promise<{ url: string; port: number }> {
  const server = await startHttp({ args: ['--no-auth'], env });
  servers.push(server);
  return { url: server.url, port: Number(new URL(server.url).port) };
}

interface Held {
  readonly socket: Socket;
  closed: boolean;
  received: string;
}

/** Open a connection and keep it: silent, or sending `trickle` one byte a second (slowloris). */
async function hold(port: number, trickle?: string): Promise<Held> {
  const socket = connect(port, '127.0.0.1');
  sockets.push(socket);
  const held: Held = { socket, closed: false, received: '' };
  socket.on('data', (chunk: Buffer) => (held.received += chunk));
  socket.on('error', () => {}); // an evicted socket may be reset
  socket.once('close', () => (held.closed = true));
  await Promise.race([once(socket, 'connect'), once(socket, 'close')]);
  if (trickle && !held.closed) {
    let sent = 0;
    const timer = setInterval(() => {
      if (held.closed) clearInterval(timer);
      else socket.write(trickle.charAt(sent++ % trickle.length));
    }, 1000);
    timers.push(timer);
  }
  return held;
}

const waitFor = async (check: () => boolean, ms: number): Promise<boolean> => {
  for (const until = Date.now() + ms; Date.now() < until; ) {
    if (check()) return true;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return check();
};

interface Answer {
  readonly status: number;
  readonly body: string;
  readonly ms: number;
  readonly reused: boolean;
}

/** One request with node:http (through `agent`, to tell whether it reused a connection). */
async function call(port: number, path: string, agent: Agent | false, body?: unknown): Promise<Answer> {
  const started = performance.now();
  const req = request({
    host: '127.0.0.1',
    port,
    path,
    agent,
    method: body === undefined ? 'GET' : 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
  });
  req.end(body === undefined ? undefined : JSON.stringify(body));
  const [res] = (await once(req, 'response')) as [import('node:http').IncomingMessage];
  let text = '';
  for await (const chunk of res) text += chunk;
  return {
    status: res.statusCode ?? 0,
    body: text,
    ms: performance.now() - started,
    reused: req.reusedSocket,
  };
}

const PING = { jsonrpc: '2.0', id: 1, method: 'ping' };
const HEALTH = { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'health', arguments: {} } };
const SLOW_HEAD = 'POST /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\nx-slow: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa';

describe('serve --http under many idle and slow connections', () => {
  it('keeps at most CODEXEC_HTTP_MAX_CONNECTIONS (256) of 600 idle + 50 slowloris sockets; /healthz, ping and health answer within 2 s', async () => {
    // A long keep-alive so that the caller's connection, opened before the attack, is still there.
    const { port } = await serve({ CODEXEC_HTTP_KEEP_ALIVE_TIMEOUT_MS: '60000' });
    const caller = new Agent({ keepAlive: true, maxSockets: 1 });
    try {
      expect((await call(port, '/mcp', caller, PING)).status).toBe(200);
      const attack: Held[] = [];
      for (let i = 0; i < 600; i += 50) {
        attack.push(...(await Promise.all(Array.from({ length: 50 }, () => hold(port)))));
      }
      attack.push(...(await Promise.all(Array.from({ length: 50 }, () => hold(port, SLOW_HEAD)))));

      const health = await call(port, '/healthz', false); // a new connection
      expect(health.status).toBe(200);
      expect(health.ms).toBeLessThan(2000);
      const ping = await call(port, '/mcp', caller, PING);
      expect(ping).toMatchObject({ status: 200, reused: true });
      expect(ping.body).toContain('"result":{}');
      expect(ping.ms).toBeLessThan(2000);
      const tool = await call(port, '/mcp', caller, HEALTH);
      expect(tool).toMatchObject({ status: 200, reused: true });
      expect(tool.body).toContain('\\"status\\":\\"ok\\"');
      expect(tool.ms).toBeLessThan(2000);

      // The server let go of everything past its cap (the caller's connection is one of the 256).
      const open = () => attack.filter((held) => !held.closed).length;
      await waitFor(() => open() <= 255, 5000);
      expect(open()).toBeLessThanOrEqual(255);
    } finally {
      caller.destroy();
    }
  }, 60_000);

  it('closes a request head trickled a byte a second, and a silent connection, after CODEXEC_HTTP_HEADERS_TIMEOUT_MS (408)', async () => {
    const { port } = await serve({ CODEXEC_HTTP_HEADERS_TIMEOUT_MS: '2000' });
    const slow = await Promise.all(Array.from({ length: 20 }, () => hold(port, SLOW_HEAD)));
    const silent = await Promise.all(Array.from({ length: 20 }, () => hold(port)));
    const started = Date.now();
    const all = [...slow, ...silent];
    // 2 s of header time, then at most 1 s until the server's next check, and slack for a busy machine.
    expect(await waitFor(() => all.every((held) => held.closed), 6000)).toBe(true);
    expect(Date.now() - started).toBeGreaterThanOrEqual(1000);
    for (const held of slow) expect(held.received).toMatch(/^HTTP\/1\.1 408/);
  }, 30_000);

  it('closes a connection idle after its request once CODEXEC_HTTP_KEEP_ALIVE_TIMEOUT_MS has passed', async () => {
    const { port } = await serve({ CODEXEC_HTTP_KEEP_ALIVE_TIMEOUT_MS: '1000' });
    const held = await hold(port);
    held.socket.write('GET /healthz HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n');
    expect(await waitFor(() => held.received.includes('{"status":"ok"}'), 5000)).toBe(true);
    const answered = Date.now();
    expect(await waitFor(() => held.closed, 4000)).toBe(true);
    const idle = Date.now() - answered;
    expect(idle).toBeGreaterThanOrEqual(700);
    expect(idle).toBeLessThan(3000); // Node's own default is 5 s
  }, 30_000);

  it('answers a newcomer 503 at once when every connection under the cap has made a request', async () => {
    const { port } = await serve({
      CODEXEC_HTTP_MAX_CONNECTIONS: '4',
      CODEXEC_HTTP_KEEP_ALIVE_TIMEOUT_MS: '60000',
    });
    const busy: Held[] = [];
    for (let i = 0; i < 4; i++) {
      const held = await hold(port);
      held.socket.write('GET /healthz HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n');
      expect(await waitFor(() => held.received.includes('{"status":"ok"}'), 5000)).toBe(true);
      busy.push(held);
    }
    const started = Date.now();
    const refused = await call(port, '/healthz', false);
    expect(refused.status).toBe(503);
    expect(refused.body).toContain('CODEXEC_HTTP_MAX_CONNECTIONS');
    expect(Date.now() - started).toBeLessThan(2000);
    expect(busy.every((held) => !held.closed)).toBe(true);
    const said = () =>
      servers[0]?.stderr().includes('refusing new ones (CODEXEC_HTTP_MAX_CONNECTIONS)') ?? false;
    expect(await waitFor(said, 2000)).toBe(true); // the operator learns why
    // One of them leaves: a newcomer gets in.
    busy[0]?.socket.destroy();
    expect(await waitFor(() => busy[0]?.closed === true, 2000)).toBe(true);
    await new Promise((resolve) => setTimeout(resolve, 100)); // the server sees the close too
    expect((await call(port, '/healthz', false)).status).toBe(200);
  }, 30_000);
});
