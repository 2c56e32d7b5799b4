// The egress proxy (issue #32): real origins on loopback, real clients over a lane's Unix socket
// and its TCP port. What the rules refuse is never contacted (each origin counts its accepts).
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { type AddressInfo, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  type EgressConnection,
  EgressRules,
  type Lane,
  type LaneOptions,
  type LaneUser,
  MAX_OPEN,
  openLane,
  parseRules,
} from '../../src/egress/index.js';
import {
  type Handler,
  httpsThrough,
  type Origin,
  type Pem,
  proxied,
  rawSocket,
  readAll,
  rest,
  selfSigned,
  startOrigin,
  tunnel,
  until,
  via,
} from './clients.js';

const BIG = randomBytes(1 << 20);
const root = mkdtempSync(join(tmpdir(), 'codexec-egress-'));
let pem: Pem;
let web: Origin; // plain HTTP
let secure: Origin; // HTTPS
let other: Origin; // plain HTTP, never listed

beforeAll(async () => {
  pem = selfSigned();
  other = await startOrigin((_req, res) => res.end('other'));
  const handler: Handler = (req, res) => {
    if (req.url === '/big') return res.end(BIG);
    if (req.url === '/never') return; // holds the request open
    if (req.url === '/echo') return void req.pipe(res);
    if (req.url === '/redirect') {
      res.writeHead(302, { location: `http://localhost:${other.port}/` });
      return res.end();
    }
    if (req.url?.startsWith('/headers'))
      return res.end(JSON.stringify({ url: req.url, headers: req.rawHeaders }));
    res.setHeader('x-origin', 'yes');
    res.end('hello');
  };
  web = await startOrigin(handler);
  secure = await startOrigin(handler, pem);
});
afterAll(async () => {
  await Promise.all([web?.close(), secure?.close(), other?.close()]);
  rmSync(root, { recursive: true, force: true });
});

const lanes: Lane[] = [];
afterEach(async () => {
  await Promise.all(lanes.splice(0).map((lane) => lane.close()));
});

async function open(kind: 'socket' | 'tcp', user?: LaneUser, options?: LaneOptions): Promise<Lane> {
  const where =
    kind === 'socket'
      ? { socket: join(mkdtempSync(join(root, 'lane-')), 'egress.sock') }
      : { tcp: true as const };
  const lane = await openLane(where, user, options);
  lanes.push(lane);
  return lane;
}

function userOf(allowed: string, more: { denied?: string; ask?: LaneUser['ask']; narrow?: string } = {}) {
  const records: EgressConnection[] = [];
  let rules = new EgressRules(parseRules(allowed, 'allowed'), parseRules(more.denied ?? '', 'denied'));
  if (more.narrow !== undefined) rules = rules.narrow(parseRules(more.narrow, 'call'));
  const user: LaneUser = {
    rules,
    record: (connection) => records.push(connection),
    ...(more.ask && { ask: more.ask }),
  };
  return { user, records };
}

describe.each(['socket', 'tcp'] as const)('a listed target over the lane’s %s', (kind) => {
  it('is reachable over plain HTTP (absolute form), body intact, 1 MB too', async () => {
    const { user, records } = userOf(`localhost:${web.port}`);
    const lane = await open(kind, user);
    const before = web.open();
    const small = await proxied(via(lane), `http://localhost:${web.port}/`, {
      headers: { host: `localhost:${web.port}` },
    });
    expect(small.status).toBe(200);
    expect(small.body.toString()).toBe('hello');
    expect(small.headers['x-origin']).toBe('yes');
    const big = await proxied(via(lane), `http://localhost:${web.port}/big`, {
      headers: { host: `localhost:${web.port}` },
    });
    expect(big.body.equals(BIG)).toBe(true);
    const echoed = await proxied(via(lane), `http://localhost:${web.port}/echo`, {
      method: 'POST',
      headers: { host: `localhost:${web.port}` },
      body: BIG,
    });
    expect(echoed.body.equals(BIG)).toBe(true);
    expect(records).toHaveLength(3);
    expect(records[0]).toMatchObject({
      host: 'localhost',
      port: web.port,
      allowed: true,
      rule: `localhost:${web.port}`,
      address: '127.0.0.1',
      method: 'GET',
    });
    expect(records[2]?.method).toBe('POST');
    // No connection to the origin is left idle behind a request.
    await until(() => web.open() === before);
    expect(Date.parse(records[0]?.at ?? '')).not.toBeNaN();
  });

  it('is reachable over HTTPS (CONNECT, TLS end to end), body intact, 1 MB too', async () => {
    const { user, records } = userOf(`localhost:${secure.port}`);
    const lane = await open(kind, user);
    const small = await httpsThrough(via(lane), `localhost:${secure.port}`, '/', pem.cert);
    expect(small.status).toBe(200);
    expect(small.body.toString()).toBe('hello');
    const big = await httpsThrough(via(lane), `localhost:${secure.port}`, '/big', pem.cert);
    expect(big.body.equals(BIG)).toBe(true);
    expect(records).toEqual([
      expect.objectContaining({
        host: 'localhost',
        port: secure.port,
        allowed: true,
        method: 'CONNECT',
        address: '127.0.0.1',
      }),
      expect.objectContaining({ host: 'localhost', port: secure.port, allowed: true, method: 'CONNECT' }),
    ]);
  });
});

describe('refusals', () => {
  it('an unlisted target: 403 with the reason, its origin never contacted, the refusal recorded', async () => {
    const { user, records } = userOf(`localhost:${web.port}`);
    const lane = await open('socket', user);
    const before = other.accepted();
    const t = await tunnel(via(lane), `localhost:${other.port}`);
    expect(t.status).toBe(403);
    expect(await rest(t)).toContain(
      `codexec egress: localhost:${other.port} refused: localhost:${other.port} is not on the allowed list`,
    );
    const plain = await proxied(via(lane), `http://localhost:${other.port}/`, {
      headers: { host: `localhost:${other.port}` },
    });
    expect(plain.status).toBe(403);
    expect(plain.body.toString()).toContain('is not on the allowed list');
    expect(other.accepted()).toBe(before);
    expect(records).toEqual([
      expect.objectContaining({
        host: 'localhost',
        port: other.port,
        allowed: false,
        status: 403,
        method: 'CONNECT',
      }),
      expect.objectContaining({
        host: 'localhost',
        port: other.port,
        allowed: false,
        status: 403,
        method: 'GET',
      }),
    ]);
    expect(records[0]?.reason).toContain('not on the allowed list');
    expect(records[0]?.address).toBeUndefined();
  });

  it('the denied list wins over the allowed one', async () => {
    const { user, records } = userOf(`localhost:${secure.port}`, { denied: `LOCALHOST:${secure.port}` });
    const lane = await open('socket', user);
    const before = secure.accepted();
    const t = await tunnel(via(lane), `localhost:${secure.port}`);
    expect(t.status).toBe(403);
    expect(await rest(t)).toContain(`denied by LOCALHOST:${secure.port}`);
    expect(secure.accepted()).toBe(before);
    expect(records[0]).toMatchObject({ allowed: false, rule: `LOCALHOST:${secure.port}` });
  });

  it('an IP literal is not the name listed: 127.0.0.1 refused when only localhost is', async () => {
    const { user } = userOf(`localhost:${secure.port}`);
    const lane = await open('tcp', user);
    const before = secure.accepted();
    const t = await tunnel(via(lane), `127.0.0.1:${secure.port}`);
    expect(t.status).toBe(403);
    expect(secure.accepted()).toBe(before);
    // Listed as an address, it is reachable.
    lane.use(userOf(`127.0.0.1:${secure.port}`).user);
    expect((await httpsThrough(via(lane), `127.0.0.1:${secure.port}`, '/', pem.cert)).status).toBe(200);
  });

  it('reads IPv6 literals in brackets and names them without', async () => {
    const { user, records } = userOf(`[::1]:${web.port}`);
    const lane = await open('socket', user);
    const refused = await tunnel(via(lane), `[::1]:${secure.port}`);
    expect(refused.status).toBe(403);
    expect(await rest(refused)).toContain(`codexec egress: [::1]:${secure.port} refused`);
    // Listed: the literal is its own address (the origin listens on IPv4 only: nothing answers).
    const listed = await tunnel(via(lane), `[::1]:${web.port}`);
    expect(listed.status).toBe(502);
    expect(records.map((r) => [r.host, r.port, r.status])).toEqual([
      ['::1', secure.port, 403],
      ['::1', web.port, 502],
    ]);
  });

  it('a wildcard never reaches an internal address a name resolves to (DNS rebinding)', async () => {
    const resolved: string[] = [];
    // The resolver a rebinding attacker controls: a public-looking name answering loopback.
    const resolve = async (host: string) => {
      resolved.push(host);
      return host === 'api.rebind.test' ? ['127.0.0.1'] : [];
    };
    const { user, records } = userOf(`*.rebind.test:${secure.port}`);
    const lane = await open('socket', user, { resolve });
    const before = secure.accepted();
    const t = await tunnel(via(lane), `api.rebind.test:${secure.port}`);
    expect(t.status).toBe(403);
    expect(await rest(t)).toContain('resolved to 127.0.0.1, an internal address');
    expect(secure.accepted()).toBe(before);
    expect(records[0]).toMatchObject({ allowed: false, rule: `*.rebind.test:${secure.port}` });
    // A name the rules refuse is not even resolved (no DNS query leaks it).
    expect((await tunnel(via(lane), `api.elsewhere.test:${secure.port}`)).status).toBe(403);
    expect(resolved).toEqual(['api.rebind.test']);
  });

  it("a call's narrowing refuses what the server's list allows", async () => {
    const { user, records } = userOf(`localhost:${secure.port}, localhost:${web.port}`, {
      narrow: `localhost:${web.port}`,
    });
    const lane = await open('socket', user);
    const before = secure.accepted();
    const t = await tunnel(via(lane), `localhost:${secure.port}`);
    expect(t.status).toBe(403);
    expect(await rest(t)).toContain("not in this call's allowed_domains");
    expect(secure.accepted()).toBe(before);
    expect(records[0]?.allowed).toBe(false);
    const allowed = await proxied(via(lane), `http://localhost:${web.port}/`, {
      headers: { host: `localhost:${web.port}` },
    });
    expect(allowed.status).toBe(200);
  });

  it('a Host header naming another target: 403, the origin untouched', async () => {
    const { user, records } = userOf(`localhost:${web.port}`);
    const lane = await open('socket', user);
    const before = web.accepted();
    const answer = await proxied(via(lane), `http://localhost:${web.port}/`, {
      headers: { host: 'intranet.example' },
    });
    expect(answer.status).toBe(403);
    expect(answer.body.toString()).toContain('Host header differs from the request target');
    expect(web.accepted()).toBe(before);
    expect(records[0]).toMatchObject({ allowed: false, host: 'localhost', port: web.port });
    // Case aside, the same target passes, and the origin gets the path in origin form.
    const same = await proxied(via(lane), `http://localhost:${web.port}/headers?a=1`, {
      headers: { host: `LocalHost:${web.port}` },
    });
    expect(same.status).toBe(200);
    expect(JSON.parse(same.body.toString()).url).toBe('/headers?a=1');
  });

  it('keeps hop-by-hop headers on this hop and passes the others as written', async () => {
    const { user } = userOf(`localhost:${web.port}`);
    const lane = await open('tcp', user);
    // A POST: node's client would keep its connection to the origin alive unless told not to.
    const answer = await proxied(via(lane), `http://localhost:${web.port}/headers`, {
      method: 'POST',
      body: Buffer.from('a body'),
      headers: {
        host: `localhost:${web.port}`,
        'Proxy-Authorization': 'Basic c2VjcmV0',
        'Proxy-Connection': 'keep-alive',
        Connection: 'X-Hop',
        'X-Hop': 'dropped',
        'Keep-Alive': 'timeout=5',
        TE: 'trailers',
        'X-End-To-End': 'Kept As Is',
      },
    });
    const seen: string[] = JSON.parse(answer.body.toString()).headers;
    const names = seen.filter((_, index) => index % 2 === 0).map((name) => name.toLowerCase());
    for (const hop of ['proxy-authorization', 'proxy-connection', 'x-hop', 'keep-alive', 'te'])
      expect(names).not.toContain(hop);
    expect(seen).toContain('X-End-To-End');
    expect(seen).toContain('Kept As Is');
    expect(seen.slice(0, 2)).toEqual(['Host', `localhost:${web.port}`]);
    // One request per connection to the origin (each is checked and connected anew).
    expect(seen.slice(-2)).toEqual(['Connection', 'close']);
  });

  it('checks each request on a kept-alive client connection anew', async () => {
    const { user, records } = userOf(`localhost:${web.port}`);
    const lane = await open('socket', user);
    const before = other.accepted();
    const socket = rawSocket(via(lane));
    const said = readAll(socket);
    socket.write(
      `GET http://localhost:${web.port}/ HTTP/1.1\r\nHost: localhost:${web.port}\r\n\r\n` +
        `GET http://localhost:${other.port}/ HTTP/1.1\r\nHost: localhost:${other.port}\r\nConnection: close\r\n\r\n`,
    );
    const text = await said;
    expect(text).toMatch(/^HTTP\/1\.1 200 OK\r\n[\s\S]*helloHTTP\/1\.1 403 Forbidden\r\n/);
    expect(other.accepted()).toBe(before);
    // Node hands both to the lane at once (answers still go back in order): decided side by side.
    expect(records.map((r) => [r.port, r.allowed]).sort()).toEqual(
      [
        [web.port, true],
        [other.port, false],
      ].sort(),
    );
  });

  it('passes a redirect through without following it; the next request is checked anew', async () => {
    const { user, records } = userOf(`localhost:${web.port}`);
    const lane = await open('socket', user);
    const before = other.accepted();
    const first = await proxied(via(lane), `http://localhost:${web.port}/redirect`, {
      headers: { host: `localhost:${web.port}` },
    });
    expect(first.status).toBe(302);
    expect(first.headers.location).toBe(`http://localhost:${other.port}/`);
    const second = await proxied(via(lane), first.headers.location as string, {
      headers: { host: `localhost:${other.port}` },
    });
    expect(second.status).toBe(403);
    expect(other.accepted()).toBe(before);
    expect(records.map((r) => [r.port, r.allowed])).toEqual([
      [web.port, true],
      [other.port, false],
    ]);
  });

  it('without a user every connection is refused; use() changes who is checked', async () => {
    const lane = await open('socket');
    const before = secure.accepted();
    const t = await tunnel(via(lane), `localhost:${secure.port}`);
    expect(t.status).toBe(403);
    expect(await rest(t)).toContain('no run is using this proxy');
    const { user, records } = userOf(`localhost:${secure.port}`);
    lane.use(user);
    expect((await httpsThrough(via(lane), `localhost:${secure.port}`, '/', pem.cert)).status).toBe(200);
    lane.use(undefined);
    expect((await tunnel(via(lane), `localhost:${secure.port}`)).status).toBe(403);
    expect(secure.accepted()).toBe(before + 1);
    expect(records).toHaveLength(1);
  });

  it('origin-form requests and malformed targets: 400', async () => {
    const { user, records } = userOf(`localhost:${web.port}`);
    const lane = await open('socket', user);
    const before = web.accepted();
    const origin = await proxied(via(lane), '/x', { headers: { host: 'localhost' } });
    expect(origin.status).toBe(400);
    expect(origin.body.toString()).toContain('this is a proxy');
    const https = await proxied(via(lane), `https://localhost:${web.port}/`, {
      headers: { host: `localhost:${web.port}` },
    });
    expect(https.status).toBe(400);
    for (const target of [
      'localhost',
      'localhost:0',
      'localhost:65536',
      `user@localhost:${web.port}`,
      `127.1:${web.port}`,
      `0x7f000001:${web.port}`,
      `[::1:${web.port}`,
      `[localhost]:${web.port}`,
      'a:b:c',
    ]) {
      const socket = rawSocket(via(lane));
      const said = readAll(socket);
      socket.write(`CONNECT ${target} HTTP/1.1\r\nHost: ${target}\r\n\r\n`);
      expect(await said, target).toMatch(/^HTTP\/1\.1 400 /);
    }
    expect(web.accepted()).toBe(before);
    expect(records).toEqual([]);
  });

  it('a listed target with nothing listening: 502 with the reason', async () => {
    const probe = createServer().listen(0, '127.0.0.1');
    await once(probe, 'listening');
    const port = (probe.address() as AddressInfo).port;
    await new Promise((resolve) => probe.close(resolve));
    const { user, records } = userOf(`localhost:${port}`);
    const lane = await open('socket', user);
    const t = await tunnel(via(lane), `localhost:${port}`);
    expect(t.status).toBe(502);
    expect(await rest(t)).toContain('could not connect (ECONNREFUSED)');
    expect(records[0]).toMatchObject({ allowed: false, status: 502 });
  });
});

describe('ask', () => {
  it('is asked for an unlisted target only; true lets it through, false refuses', async () => {
    const questions: string[] = [];
    let answer = true;
    const ask = async (host: string, port: number) => {
      questions.push(`${host}:${port}`);
      return answer;
    };
    const { user, records } = userOf(`localhost:${web.port}`, { denied: `localhost:${other.port}`, ask });
    const lane = await open('socket', user);
    const target = `127.0.0.1:${secure.port}`;
    expect((await httpsThrough(via(lane), target, '/', pem.cert)).status).toBe(200);
    expect(records.at(-1)).toMatchObject({ allowed: true, asked: true, address: '127.0.0.1' });
    answer = false;
    const before = secure.accepted();
    const t = await tunnel(via(lane), target);
    expect(t.status).toBe(403);
    expect(await rest(t)).toContain('refused when asked');
    expect(secure.accepted()).toBe(before);
    expect(records.at(-1)).toMatchObject({ allowed: false, asked: true });
    // Never asked for a listed target, nor a denied one.
    answer = true;
    await proxied(via(lane), `http://localhost:${web.port}/`, { headers: { host: `localhost:${web.port}` } });
    expect((await tunnel(via(lane), `localhost:${other.port}`)).status).toBe(403);
    expect(questions).toEqual([target, target]);
  });

  it('an approved name reaches public addresses only; a failed question is a no', async () => {
    const { user } = userOf('', { ask: async () => true });
    const lane = await open('socket', user);
    const before = secure.accepted();
    const t = await tunnel(via(lane), `localhost:${secure.port}`);
    expect(t.status).toBe(403);
    expect(await rest(t)).toContain('an internal address');
    lane.use(userOf('', { ask: () => Promise.reject(new Error('no one to ask')) }).user);
    expect((await tunnel(via(lane), `127.0.0.1:${secure.port}`)).status).toBe(403);
    expect(secure.accepted()).toBe(before);
  });
  it('holds the connection while asking; a lane closed meanwhile connects nothing', async () => {
    let asked = () => {};
    const question = new Promise<void>((resolve) => {
      asked = resolve;
    });
    const { user, records } = userOf('', {
      ask: () => {
        asked();
        return new Promise<boolean>(() => {});
      },
    });
    const lane = await open('socket', user);
    const before = secure.accepted();
    const req = tunnel(via(lane), `127.0.0.1:${secure.port}`);
    await question;
    await lane.close();
    await expect(req).rejects.toThrow();
    expect(secure.accepted()).toBe(before);
    expect(records).toMatchObject([{ allowed: false, asked: true }]);
  });
});

describe('the lane itself', () => {
  it('opens its socket for every uid (0666)', async () => {
    const lane = await open('socket');
    expect(statSync(lane.socket as string).mode & 0o777).toBe(0o666);
  });

  // Only root can start a process as another uid; the mode above is checked for everyone.
  it.skipIf(process.getuid?.() !== 0)('lets uid 65534 (a sandbox user) connect to its socket', async () => {
    const { user } = userOf(`localhost:${web.port}`);
    const lane = await open('socket', user);
    // The directories above it are the test's own (0700): let that uid through them.
    chmodSync(root, 0o711);
    chmodSync(dirname(lane.socket as string), 0o711);
    const script = `const s = require('node:net').connect(process.argv[1]);
      s.on('error', (e) => { console.log(e.code); });
      s.on('data', (d) => { console.log(String(d).split('\\r\\n')[0]); s.destroy(); });
      s.write('CONNECT localhost:${web.port} HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n');`;
    const child = spawn(process.execPath, ['-e', script, lane.socket as string], { uid: 65534, gid: 65534 });
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString();
    });
    await once(child, 'close');
    expect(out.trim()).toBe('HTTP/1.1 200 Connection Established');
  });

  it('refuses a connect timeout that is not a positive number', async () => {
    await expect(openLane({ tcp: true }, undefined, { connectTimeout: 0 })).rejects.toThrow(RangeError);
  });

  it('fails to open where a file is already, and leaves that file', async () => {
    const path = join(mkdtempSync(join(root, 'lane-')), 'egress.sock');
    writeFileSync(path, 'not a socket');
    await expect(openLane({ socket: path })).rejects.toThrow(/EADDRINUSE/);
    expect(readFileSync(path, 'utf8')).toBe('not a socket');
  });

  it('passes bytes sent right after the CONNECT header, and a half-close', async () => {
    const { user } = userOf(`localhost:${web.port}`);
    const lane = await open('socket', user);
    const socket = rawSocket(via(lane));
    const chunks: Buffer[] = [];
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    // One write: the origin's request travels as the CONNECT's `head`; then our end of sending.
    socket.end(
      `CONNECT localhost:${web.port} HTTP/1.1\r\nHost: localhost:${web.port}\r\n\r\n` +
        `GET / HTTP/1.0\r\nHost: localhost:${web.port}\r\n\r\n`,
    );
    await once(socket, 'close');
    const text = Buffer.concat(chunks).toString();
    expect(text).toMatch(/^HTTP\/1\.1 200 Connection Established\r\n\r\nHTTP\/1\.1 200 OK\r\n/);
    expect(text.endsWith('hello')).toBe(true);
  });

  it('a client gone mid-request: the origin side closes too, the lane goes on', async () => {
    const { user } = userOf(`localhost:${web.port}`);
    const lane = await open('tcp', user);
    const before = web.open();
    const socket = rawSocket(via(lane));
    const gone = readAll(socket);
    socket.write(`GET http://localhost:${web.port}/never HTTP/1.1\r\nHost: localhost:${web.port}\r\n\r\n`);
    await until(() => web.open() === before + 1);
    socket.resetAndDestroy();
    await gone;
    await until(() => web.open() === before);
    const answer = await proxied(via(lane), `http://localhost:${web.port}/`, {
      headers: { host: `localhost:${web.port}` },
    });
    expect(answer.body.toString()).toBe('hello');
  });

  it(`answers 503 beyond ${MAX_OPEN} open tunnels, and takes more once one closes`, async () => {
    const { user, records } = userOf(`localhost:${web.port}`);
    const lane = await open('tcp', user);
    const before = web.open();
    const open64 = await Promise.all(
      Array.from({ length: MAX_OPEN }, () => tunnel(via(lane), `localhost:${web.port}`)),
    );
    expect(open64.every((t) => t.status === 200)).toBe(true);
    const extra = await tunnel(via(lane), `localhost:${web.port}`);
    expect(extra.status).toBe(503);
    expect(records.at(-1)).toMatchObject({ allowed: false, status: 503 });
    open64[0]?.socket.destroy();
    // Once the lane has seen that close (the origin's side of it ends with it), one more fits.
    await until(() => web.open() === before + MAX_OPEN - 1);
    expect((await tunnel(via(lane), `localhost:${web.port}`)).status).toBe(200);
    for (const t of open64) t.socket.destroy();
  });

  it('close() ends open tunnels, unlinks the socket, and is idempotent', async () => {
    const { user } = userOf(`localhost:${secure.port}`);
    const lane = await open('socket', user);
    const before = secure.open();
    const t = await tunnel(via(lane), `localhost:${secure.port}`);
    expect(t.status).toBe(200);
    await until(() => secure.open() === before + 1);
    const closed = once(t.socket, 'close');
    await Promise.all([lane.close(), lane.close()]);
    await closed;
    await until(() => secure.open() === before);
    expect(existsSync(lane.socket as string)).toBe(false);
    await lane.close();
  });

  it.each(['socket', 'tcp'] as const)('survives garbage and a client gone mid-tunnel (%s)', async (kind) => {
    const { user } = userOf(`localhost:${secure.port}, localhost:${web.port}`);
    const lane = await open(kind, user);
    const garbage = rawSocket(via(lane));
    const said = readAll(garbage);
    garbage.write(randomBytes(4096));
    garbage.write('\r\n\r\nCONNECT \0\0 HTTP/9\r\n\r\n');
    expect(await said).toMatch(/^HTTP\/1\.1 400 /);
    const before = web.open();
    const t = await tunnel(via(lane), `localhost:${web.port}`);
    expect(t.status).toBe(200);
    await until(() => web.open() === before + 1);
    const gone = readAll(t.socket);
    // Half a request: the origin waits for the rest, so only the lane's cut can close its side.
    t.socket.write(`GET / HTTP/1.1\r\nHost: localhost:${web.port}\r\n`);
    await new Promise((resolve) => setTimeout(resolve, 50));
    // A TCP reset (RST): only the lane's cut closes the origin's side. A Unix socket has no reset:
    // its close reads as an end of stream, passed on.
    if (kind === 'tcp') t.socket.resetAndDestroy();
    else t.socket.destroy();
    await gone;
    await until(() => web.open() === before);
    const answer = await proxied(via(lane), `http://localhost:${web.port}/`, {
      headers: { host: `localhost:${web.port}` },
    });
    expect(answer.body.toString()).toBe('hello');
    expect((await httpsThrough(via(lane), `localhost:${secure.port}`, '/', pem.cert)).status).toBe(200);
  });
});
