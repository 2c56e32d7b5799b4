// serve --http's connection bounds: a cap on open connections where only a connection that made an
// authenticated request keeps its place, a bound per client address on the others, a time limit on
// request heads (slowloris) and on idle keep-alive connections, and cheap calls that still answer
// while an attacker holds hundreds of sockets. Every socket is on loopback (127.0.0.x) and closed
// at the end.
import { once } from 'node:events';
import { rmSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { connect, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { addressKey } from '../../../src/server/http/connections.js';
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

const TOKEN = 'connections-token-0123456789';

/** A server on 127.0.0.1: without tokens (`--no-auth`), or with TOKEN when `token` is set. */
async function serve(
  env: Record<string, string> = {},
  token = false,
): Promise<{ url: string; port: number }> {
  const server = token
    ? await startHttp({ env: { CODEXEC_HTTP_TOKEN: TOKEN, ...env } })
    : await startHttp({ args: ['--no-auth'], env });
  servers.push(server);
  return { url: server.url, port: Number(new URL(server.url).port) };
}

interface Held {
  readonly socket: Socket;
  closed: boolean;
  received: string;
}

/**
 * Open a connection (from `from`, another loopback address, when given) and keep it: silent, or
 * sending `trickle` one byte a second (slowloris).
 */
async function hold(port: number, trickle?: string, from?: string): Promise<Held> {
  const socket = connect({ port, host: '127.0.0.1', ...(from && { localAddress: from }) });
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
async function call(
  port: number,
  path: string,
  agent: Agent | false,
  body?: unknown,
  token?: string,
): Promise<Answer> {
  const started = performance.now();
  const req = request({
    host: '127.0.0.1',
    port,
    path,
    agent,
    method: body === undefined ? 'GET' : 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      ...(token && { authorization: `Bearer ${token}` }),
    },
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
const HEALTHZ = 'GET /healthz HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n';

/** A keep-alive POST /mcp of `message`, with a bearer token when given. */
function mcpPost(message: unknown, token?: string): string {
  const body = JSON.stringify(message);
  const auth = token ? `authorization: Bearer ${token}\r\n` : '';
  return (
    'POST /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n' +
    `accept: application/json, text/event-stream\r\n${auth}content-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`
  );
}

/** Send `request` on a held connection; true once one more answer containing `answer` came back. */
async function ask(held: Held, request: string, answer: string): Promise<boolean> {
  const count = () => held.received.split(answer).length - 1;
  const before = count();
  if (held.closed) return false;
  held.socket.write(request);
  return waitFor(() => count() > before, 5000);
}

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
    // 40 connections of one address: past its default bound the oldest would be closed at once.
    const { port } = await serve({
      CODEXEC_HTTP_HEADERS_TIMEOUT_MS: '2000',
      CODEXEC_HTTP_MAX_CONNECTIONS_PER_ADDRESS: '64',
    });
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

  it('answers a newcomer 503 at once when every connection under the cap has made an authenticated request', async () => {
    const { port } = await serve({
      CODEXEC_HTTP_MAX_CONNECTIONS: '4',
      CODEXEC_HTTP_KEEP_ALIVE_TIMEOUT_MS: '60000',
    });
    const busy: Held[] = [];
    for (let i = 0; i < 4; i++) {
      const held = await hold(port);
      // Without tokens (--no-auth) every /mcp request is the local principal's: authenticated.
      expect(await ask(held, mcpPost(PING), '"result":{}')).toBe(true);
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
    // The server sees the close a moment after the client does: poll until it lets one in.
    await expect.poll(async () => (await call(port, '/healthz', false)).status, { timeout: 5000 }).toBe(200);
  }, 30_000);

  it('closes the oldest connection that made only unauthenticated requests for a newcomer at the cap', async () => {
    const { port } = await serve(
      { CODEXEC_HTTP_MAX_CONNECTIONS: '4', CODEXEC_HTTP_KEEP_ALIVE_TIMEOUT_MS: '60000' },
      true,
    );
    const anonymous: Held[] = [];
    for (let i = 0; i < 3; i++) {
      const held = await hold(port);
      expect(await ask(held, HEALTHZ, '{"status":"ok"}')).toBe(true);
      anonymous.push(held);
    }
    const member = await hold(port);
    expect(await ask(member, mcpPost(PING, TOKEN), '"result":{}')).toBe(true);
    // The cap is full; the newcomer gets in and the oldest anonymous connection makes room.
    const newcomer = await hold(port);
    expect(await ask(newcomer, HEALTHZ, '{"status":"ok"}')).toBe(true);
    expect(await waitFor(() => anonymous[0]?.closed === true, 2000)).toBe(true);
    expect(anonymous.slice(1).every((held) => !held.closed)).toBe(true);
    // The token holder's connection, the oldest of all, keeps its place and still serves.
    expect(await ask(member, mcpPost(PING, TOKEN), '"result":{}')).toBe(true);
  }, 30_000);
});

describe('serve --http refusing a request before its body', () => {
  it('drops a short body and keeps the connection; cuts one that does not end within a second', async () => {
    const { port } = await serve({ CODEXEC_HTTP_KEEP_ALIVE_TIMEOUT_MS: '60000' }, true);
    const short = await hold(port);
    const head = 'POST /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n';
    short.socket.write(`${head}content-length: 2000\r\n\r\n${' '.repeat(1000)}`);
    expect(await waitFor(() => short.received.startsWith('HTTP/1.1 401'), 5000)).toBe(true);
    short.socket.write(' '.repeat(1000)); // the rest of it, after the answer
    expect(await ask(short, HEALTHZ, '{"status":"ok"}')).toBe(true);
    expect(short.closed).toBe(false);
    // 60 MB announced, 100 KB sent, then silence: answered, and cut without waiting for the rest.
    const long = await hold(port);
    long.socket.write(`${head}content-length: ${60 * 1024 * 1024}\r\n\r\n${' '.repeat(100_000)}`);
    expect(await waitFor(() => long.received.startsWith('HTTP/1.1 401'), 5000)).toBe(true);
    const answered = Date.now();
    expect(await waitFor(() => long.closed, 5000)).toBe(true);
    expect(Date.now() - answered).toBeLessThan(3000); // CODEXEC_HTTP_REQUEST_TIMEOUT_MS is 60 s
  }, 30_000);
});

describe('serve --http with its cap held by unauthenticated keep-alive connections', () => {
  it('lets a token holder in past 256 connections asking /healthz every 3 s from 8 addresses, and keeps it', async () => {
    const { port } = await serve({}, true); // every limit at its default (cap 256, 32 per address)
    const attack: Held[] = [];
    for (let address = 2; address < 10; address++) {
      const from = `127.0.0.${address}`;
      const held = await Promise.all(Array.from({ length: 32 }, () => hold(port, undefined, from)));
      const asked = await Promise.all(held.map((one) => ask(one, HEALTHZ, '{"status":"ok"}')));
      expect(asked.every(Boolean)).toBe(true);
      attack.push(...held);
    }
    // Each keeps its connection alive (under the 5 s keep-alive timeout) as a scripted attacker would.
    timers.push(
      setInterval(() => {
        for (const held of attack) if (!held.closed) held.socket.write(HEALTHZ);
      }, 3000),
    );
    expect(attack.filter((held) => !held.closed)).toHaveLength(256);
    const caller = new Agent({ keepAlive: true, maxSockets: 1 });
    try {
      const ping = await call(port, '/mcp', caller, PING, TOKEN);
      expect(ping.status).toBe(200);
      expect(ping.body).toContain('"result":{}');
      expect(attack.filter((held) => !held.closed).length).toBeLessThanOrEqual(255);
      // More attackers come: they replace one another, never the token holder's connection.
      const more = await Promise.all(
        Array.from({ length: 20 }, (_, i) => hold(port, undefined, `127.0.1.${i}`)),
      );
      expect(
        (await Promise.all(more.map((one) => ask(one, HEALTHZ, '{"status":"ok"}')))).every(Boolean),
      ).toBe(true);
      const again = await call(port, '/mcp', caller, PING, TOKEN);
      expect(again).toMatchObject({ status: 200, reused: true });
    } finally {
      caller.destroy();
    }
  }, 90_000);
});

describe('serve --http per client address', () => {
  it('keeps at most CODEXEC_HTTP_MAX_CONNECTIONS_PER_ADDRESS (32) unauthenticated connections of one address; another address and token holders get in', async () => {
    const { port } = await serve({ CODEXEC_HTTP_KEEP_ALIVE_TIMEOUT_MS: '60000' }, true);
    const flood: Held[] = [];
    for (let i = 0; i < 48; i++) {
      const held = await hold(port);
      // A connection closed for a newer one of its address may be gone before it asks.
      if (!(await ask(held, HEALTHZ, '{"status":"ok"}'))) expect(held.closed).toBe(true);
      flood.push(held);
    }
    const open = () => flood.filter((held) => !held.closed);
    expect(await waitFor(() => open().length <= 32, 2000)).toBe(true);
    expect(open().length).toBeGreaterThanOrEqual(30);
    // The oldest went first: the newest of the flood are the ones still open.
    expect(flood.slice(-30).every((held) => !held.closed)).toBe(true);
    // Another address is not held to the first one's count.
    const other = await hold(port, undefined, '127.0.0.2');
    expect(await ask(other, HEALTHZ, '{"status":"ok"}')).toBe(true);
    // Token holders of the flooded address are not counted: 40 of them all stay.
    const members: Held[] = [];
    for (let i = 0; i < 40; i++) {
      const held = await hold(port);
      expect(await ask(held, mcpPost(PING, TOKEN), '"result":{}')).toBe(true);
      members.push(held);
    }
    expect(members.every((held) => !held.closed)).toBe(true);
    expect(other.closed).toBe(false);
    expect(open().length).toBeLessThanOrEqual(32);
  }, 60_000);

  it("answers every connection of a token holder's burst from one address: served, or 503 naming the bound, never cut unanswered", async () => {
    const { port } = await serve({}, true);
    // 100 new connections at once, each sending its authenticated request as soon as it is open:
    // they arrive before the server has read any of them, so none has shown its token yet.
    const burst = await Promise.all(
      Array.from({ length: 100 }, async () => {
        const socket = connect({ port, host: '127.0.0.1' });
        sockets.push(socket);
        let received = '';
        socket.on('data', (chunk: Buffer) => (received += chunk));
        socket.on('error', () => {}); // counted below as no answer
        socket.once('connect', () => socket.write(mcpPost(PING, TOKEN)));
        await Promise.race([once(socket, 'close'), waitFor(() => received.includes('"result":{}'), 10_000)]);
        return received;
      }),
    );
    const status = (received: string) => /^HTTP\/1\.1 (\d+)/.exec(received)?.[1] ?? 'none';
    const served = burst.filter((received) => status(received) === '200');
    const refused = burst.filter((received) => status(received) === '503');
    expect(served.length + refused.length).toBe(100);
    expect(served.length).toBeGreaterThan(0);
    for (const received of refused) expect(received).toContain('CODEXEC_HTTP_MAX_CONNECTIONS_PER_ADDRESS');
  }, 60_000);
});

describe('the client address a connection counts against', () => {
  it('is an IPv4 address as is (mapped ones too), an IPv6 address by its /64', () => {
    expect(addressKey('127.0.0.2')).toBe('127.0.0.2');
    expect(addressKey('::ffff:10.1.2.3')).toBe('10.1.2.3');
    expect(addressKey('2001:db8:1:2:aaaa::1')).toBe('2001:db8:1:2::/64');
    expect(addressKey('2001:db8:1:2:bbbb:cccc:dddd:eeee')).toBe('2001:db8:1:2::/64');
    expect(addressKey('2001:db8:1:3::1')).not.toBe(addressKey('2001:db8:1:2::1'));
    expect(addressKey('2001:0db8::1')).toBe('2001:db8:0:0::/64');
    expect(addressKey('::1')).toBe('0:0:0:0::/64');
    expect(addressKey('fe80::1%eth0')).toBe('fe80:0:0:0::/64');
  });
});
