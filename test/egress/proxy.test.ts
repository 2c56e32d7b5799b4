// The egress proxy as a client sees it: what a lane lets through over its Unix socket
// and its TCP port, and what it refuses. Real origins on loopback; what the rules refuse is never
// contacted (each origin counts the connections it accepts).
import { once } from 'node:events';
import { type AddressInfo, createServer } from 'node:net';
import { describe, expect, it } from 'vitest';
import { bench, userOf } from './bench.js';
import { httpsThrough, proxied, rawSocket, readAll, rest, tunnel, until, via } from './clients.js';

const b = bench();

describe.each(['socket', 'tcp'] as const)('a listed target over the lane’s %s', (kind) => {
  it('is reachable over plain HTTP (absolute form), body intact, 1 MB too', async () => {
    const { user, records } = userOf(`localhost:${b.web.port}`);
    const lane = await b.open(kind, user);
    const before = b.web.open();
    const small = await proxied(via(lane), `http://localhost:${b.web.port}/`, {
      headers: { host: `localhost:${b.web.port}` },
    });
    expect(small.status).toBe(200);
    expect(small.body.toString()).toBe('hello');
    expect(small.headers['x-origin']).toBe('yes');
    const big = await proxied(via(lane), `http://localhost:${b.web.port}/big`, {
      headers: { host: `localhost:${b.web.port}` },
    });
    expect(big.body.equals(b.BIG)).toBe(true);
    const echoed = await proxied(via(lane), `http://localhost:${b.web.port}/echo`, {
      method: 'POST',
      headers: { host: `localhost:${b.web.port}` },
      body: b.BIG,
    });
    expect(echoed.body.equals(b.BIG)).toBe(true);
    expect(records).toHaveLength(3);
    expect(records[0]).toMatchObject({
      host: 'localhost',
      port: b.web.port,
      allowed: true,
      rule: `localhost:${b.web.port}`,
      address: '127.0.0.1',
      method: 'GET',
    });
    expect(records[2]?.method).toBe('POST');
    // No connection to the origin is left idle behind a request.
    await until(() => b.web.open() === before);
    expect(Date.parse(records[0]?.at ?? '')).not.toBeNaN();
  });

  it('is reachable over HTTPS (CONNECT, TLS end to end), body intact, 1 MB too', async () => {
    const { user, records } = userOf(`localhost:${b.secure.port}`);
    const lane = await b.open(kind, user);
    const small = await httpsThrough(via(lane), `localhost:${b.secure.port}`, '/', b.pem.cert);
    expect(small.status).toBe(200);
    expect(small.body.toString()).toBe('hello');
    const big = await httpsThrough(via(lane), `localhost:${b.secure.port}`, '/big', b.pem.cert);
    expect(big.body.equals(b.BIG)).toBe(true);
    expect(records).toEqual([
      expect.objectContaining({
        host: 'localhost',
        port: b.secure.port,
        allowed: true,
        method: 'CONNECT',
        address: '127.0.0.1',
      }),
      expect.objectContaining({ host: 'localhost', port: b.secure.port, allowed: true, method: 'CONNECT' }),
    ]);
  });
});

describe('refusals', () => {
  it('an unlisted target: 403 with the reason, its origin never contacted, the refusal recorded', async () => {
    const { user, records } = userOf(`localhost:${b.web.port}`);
    const lane = await b.open('socket', user);
    const before = b.other.accepted();
    const t = await tunnel(via(lane), `localhost:${b.other.port}`);
    expect(t.status).toBe(403);
    expect(await rest(t)).toContain(
      `codexec egress: localhost:${b.other.port} refused: localhost:${b.other.port} is not on the allowed list`,
    );
    const plain = await proxied(via(lane), `http://localhost:${b.other.port}/`, {
      headers: { host: `localhost:${b.other.port}` },
    });
    expect(plain.status).toBe(403);
    expect(plain.body.toString()).toContain('is not on the allowed list');
    expect(b.other.accepted()).toBe(before);
    expect(records).toEqual([
      expect.objectContaining({
        host: 'localhost',
        port: b.other.port,
        allowed: false,
        status: 403,
        method: 'CONNECT',
      }),
      expect.objectContaining({
        host: 'localhost',
        port: b.other.port,
        allowed: false,
        status: 403,
        method: 'GET',
      }),
    ]);
    expect(records[0]?.reason).toContain('not on the allowed list');
    expect(records[0]?.address).toBeUndefined();
  });

  it('the denied list wins over the allowed one', async () => {
    const { user, records } = userOf(`localhost:${b.secure.port}`, { denied: `LOCALHOST:${b.secure.port}` });
    const lane = await b.open('socket', user);
    const before = b.secure.accepted();
    const t = await tunnel(via(lane), `localhost:${b.secure.port}`);
    expect(t.status).toBe(403);
    expect(await rest(t)).toContain(`denied by LOCALHOST:${b.secure.port}`);
    expect(b.secure.accepted()).toBe(before);
    expect(records[0]).toMatchObject({ allowed: false, rule: `LOCALHOST:${b.secure.port}` });
  });

  it('an IP literal is not the name listed: 127.0.0.1 refused when only localhost is', async () => {
    const { user } = userOf(`localhost:${b.secure.port}`);
    const lane = await b.open('tcp', user);
    const before = b.secure.accepted();
    const t = await tunnel(via(lane), `127.0.0.1:${b.secure.port}`);
    expect(t.status).toBe(403);
    expect(b.secure.accepted()).toBe(before);
    // Listed as an address, it is reachable.
    lane.use(userOf(`127.0.0.1:${b.secure.port}`).user);
    expect((await httpsThrough(via(lane), `127.0.0.1:${b.secure.port}`, '/', b.pem.cert)).status).toBe(200);
  });

  it('reads IPv6 literals in brackets and names them without', async () => {
    const { user, records } = userOf(`[::1]:${b.web.port}`);
    const lane = await b.open('socket', user);
    const refused = await tunnel(via(lane), `[::1]:${b.secure.port}`);
    expect(refused.status).toBe(403);
    expect(await rest(refused)).toContain(`codexec egress: [::1]:${b.secure.port} refused`);
    // Listed: the literal is its own address (the origin listens on IPv4 only: nothing answers).
    const listed = await tunnel(via(lane), `[::1]:${b.web.port}`);
    expect(listed.status).toBe(502);
    expect(records.map((r) => [r.host, r.port, r.status])).toEqual([
      ['::1', b.secure.port, 403],
      ['::1', b.web.port, 502],
    ]);
  });

  it('a wildcard never reaches an internal address a name resolves to (DNS rebinding)', async () => {
    const resolved: string[] = [];
    // The resolver a rebinding attacker controls: a public-looking name answering loopback.
    const resolve = async (host: string) => {
      resolved.push(host);
      return host === 'api.rebind.test' ? ['127.0.0.1'] : [];
    };
    const { user, records } = userOf(`*.rebind.test:${b.secure.port}`);
    const lane = await b.open('socket', user, { resolve });
    const before = b.secure.accepted();
    const t = await tunnel(via(lane), `api.rebind.test:${b.secure.port}`);
    expect(t.status).toBe(403);
    expect(await rest(t)).toContain('resolved to 127.0.0.1, an internal address');
    expect(b.secure.accepted()).toBe(before);
    expect(records[0]).toMatchObject({ allowed: false, rule: `*.rebind.test:${b.secure.port}` });
    // A name the rules refuse is not even resolved (no DNS query leaks it).
    expect((await tunnel(via(lane), `api.elsewhere.test:${b.secure.port}`)).status).toBe(403);
    expect(resolved).toEqual(['api.rebind.test']);
  });

  it('a denied name without a port is refused on the port an allowed wildcard opens, unresolved', async () => {
    const resolved: string[] = [];
    const resolve = async (host: string) => {
      resolved.push(host);
      return ['127.0.0.1'];
    };
    const { user, records } = userOf(`*.corp.test:${b.secure.port}, api.corp.test:${b.secure.port}`, {
      denied: 'secret.corp.test',
    });
    const lane = await b.open('socket', user, { resolve });
    const before = b.secure.accepted();
    const t = await tunnel(via(lane), `secret.corp.test:${b.secure.port}`);
    expect(t.status).toBe(403);
    expect(await rest(t)).toContain('denied by secret.corp.test');
    expect(resolved).toEqual([]);
    expect(b.secure.accepted()).toBe(before);
    // Its sibling, listed by name, passes the same rules and reaches the origin.
    const sibling = await httpsThrough(via(lane), `api.corp.test:${b.secure.port}`, '/', b.pem.cert);
    expect(sibling.status).toBe(200);
    expect(records.map((r) => [r.host, r.allowed, r.rule])).toEqual([
      ['secret.corp.test', false, 'secret.corp.test'],
      ['api.corp.test', true, `*.corp.test:${b.secure.port}`],
    ]);
  });

  it.each(['::ffff:127.0.0.1', '::127.0.0.1', '64:ff9b::7f00:1', '2002:7f00:1::1', '198.18.0.1', 'fec0::1'])(
    'a wildcard never reaches %s, a form of an internal address',
    async (address) => {
      const { user, records } = userOf(`*.rebind.test:${b.secure.port}`);
      const lane = await b.open('socket', user, { resolve: async () => [address] });
      const t = await tunnel(via(lane), `api.rebind.test:${b.secure.port}`);
      expect(t.status).toBe(403);
      expect(await rest(t)).toContain(`resolved to ${address}, an internal address`);
      expect(records[0]).toMatchObject({ allowed: false, host: 'api.rebind.test' });
    },
  );

  it("a call's narrowing refuses what the server's list allows", async () => {
    const { user, records } = userOf(`localhost:${b.secure.port}, localhost:${b.web.port}`, {
      narrow: `localhost:${b.web.port}`,
    });
    const lane = await b.open('socket', user);
    const before = b.secure.accepted();
    const t = await tunnel(via(lane), `localhost:${b.secure.port}`);
    expect(t.status).toBe(403);
    expect(await rest(t)).toContain("not in this call's allowed_domains");
    expect(b.secure.accepted()).toBe(before);
    expect(records[0]?.allowed).toBe(false);
    const allowed = await proxied(via(lane), `http://localhost:${b.web.port}/`, {
      headers: { host: `localhost:${b.web.port}` },
    });
    expect(allowed.status).toBe(200);
  });

  it('a Host header naming another target: 403, the origin untouched', async () => {
    const { user, records } = userOf(`localhost:${b.web.port}`);
    const lane = await b.open('socket', user);
    const before = b.web.accepted();
    const answer = await proxied(via(lane), `http://localhost:${b.web.port}/`, {
      headers: { host: 'intranet.example' },
    });
    expect(answer.status).toBe(403);
    expect(answer.body.toString()).toContain('Host header differs from the request target');
    expect(b.web.accepted()).toBe(before);
    expect(records[0]).toMatchObject({ allowed: false, host: 'localhost', port: b.web.port });
    // Case aside, the same target passes, and the origin gets the path in origin form.
    const same = await proxied(via(lane), `http://localhost:${b.web.port}/headers?a=1`, {
      headers: { host: `LocalHost:${b.web.port}` },
    });
    expect(same.status).toBe(200);
    expect(JSON.parse(same.body.toString()).url).toBe('/headers?a=1');
  });

  it('keeps hop-by-hop headers on this hop and passes the others as written', async () => {
    const { user } = userOf(`localhost:${b.web.port}`);
    const lane = await b.open('tcp', user);
    // A POST: node's client would keep its connection to the origin alive unless told not to.
    const answer = await proxied(via(lane), `http://localhost:${b.web.port}/headers`, {
      method: 'POST',
      body: Buffer.from('a body'),
      headers: {
        host: `localhost:${b.web.port}`,
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
    expect(seen.slice(0, 2)).toEqual(['Host', `localhost:${b.web.port}`]);
    // One request per connection to the origin (each is checked and connected anew).
    expect(seen.slice(-2)).toEqual(['Connection', 'close']);
  });

  it('checks each request on a kept-alive client connection anew', async () => {
    const { user, records } = userOf(`localhost:${b.web.port}`);
    const lane = await b.open('socket', user);
    const before = b.other.accepted();
    const socket = rawSocket(via(lane));
    const said = readAll(socket);
    socket.write(
      `GET http://localhost:${b.web.port}/ HTTP/1.1\r\nHost: localhost:${b.web.port}\r\n\r\n` +
        `GET http://localhost:${b.other.port}/ HTTP/1.1\r\nHost: localhost:${b.other.port}\r\nConnection: close\r\n\r\n`,
    );
    const text = await said;
    expect(text).toMatch(/^HTTP\/1\.1 200 OK\r\n[\s\S]*helloHTTP\/1\.1 403 Forbidden\r\n/);
    expect(b.other.accepted()).toBe(before);
    // Node hands both to the lane at once (answers still go back in order): decided side by side.
    expect(records.map((r) => [r.port, r.allowed]).sort()).toEqual(
      [
        [b.web.port, true],
        [b.other.port, false],
      ].sort(),
    );
  });

  it('passes a redirect through without following it; the next request is checked anew', async () => {
    const { user, records } = userOf(`localhost:${b.web.port}`);
    const lane = await b.open('socket', user);
    const before = b.other.accepted();
    const first = await proxied(via(lane), `http://localhost:${b.web.port}/redirect`, {
      headers: { host: `localhost:${b.web.port}` },
    });
    expect(first.status).toBe(302);
    expect(first.headers.location).toBe(`http://localhost:${b.other.port}/`);
    const second = await proxied(via(lane), first.headers.location as string, {
      headers: { host: `localhost:${b.other.port}` },
    });
    expect(second.status).toBe(403);
    expect(b.other.accepted()).toBe(before);
    expect(records.map((r) => [r.port, r.allowed])).toEqual([
      [b.web.port, true],
      [b.other.port, false],
    ]);
  });

  it('without a user every connection is refused; use() changes who is checked', async () => {
    const lane = await b.open('socket');
    const before = b.secure.accepted();
    const t = await tunnel(via(lane), `localhost:${b.secure.port}`);
    expect(t.status).toBe(403);
    expect(await rest(t)).toContain('no run is using this proxy');
    const { user, records } = userOf(`localhost:${b.secure.port}`);
    lane.use(user);
    expect((await httpsThrough(via(lane), `localhost:${b.secure.port}`, '/', b.pem.cert)).status).toBe(200);
    lane.use(undefined);
    expect((await tunnel(via(lane), `localhost:${b.secure.port}`)).status).toBe(403);
    expect(b.secure.accepted()).toBe(before + 1);
    expect(records).toHaveLength(1);
  });

  it('origin-form requests and malformed targets: 400', async () => {
    const { user, records } = userOf(`localhost:${b.web.port}`);
    const lane = await b.open('socket', user);
    const before = b.web.accepted();
    const origin = await proxied(via(lane), '/x', { headers: { host: 'localhost' } });
    expect(origin.status).toBe(400);
    expect(origin.body.toString()).toContain('this is a proxy');
    const https = await proxied(via(lane), `https://localhost:${b.web.port}/`, {
      headers: { host: `localhost:${b.web.port}` },
    });
    expect(https.status).toBe(400);
    for (const target of [
      'localhost',
      'localhost:0',
      'localhost:65536',
      `user@localhost:${b.web.port}`,
      `127.1:${b.web.port}`,
      `0x7f000001:${b.web.port}`,
      `[::1:${b.web.port}`,
      `[localhost]:${b.web.port}`,
      'a:b:c',
    ]) {
      const socket = rawSocket(via(lane));
      const said = readAll(socket);
      socket.write(`CONNECT ${target} HTTP/1.1\r\nHost: ${target}\r\n\r\n`);
      expect(await said, target).toMatch(/^HTTP\/1\.1 400 /);
    }
    expect(b.web.accepted()).toBe(before);
    expect(records).toEqual([]);
  });

  it('a listed target with nothing listening: 502 with the reason', async () => {
    const probe = createServer().listen(0, '127.0.0.1');
    await once(probe, 'listening');
    const port = (probe.address() as AddressInfo).port;
    await new Promise((resolve) => probe.close(resolve));
    const { user, records } = userOf(`localhost:${port}`);
    const lane = await b.open('socket', user);
    const t = await tunnel(via(lane), `localhost:${port}`);
    expect(t.status).toBe(502);
    expect(await rest(t)).toContain('could not connect (ECONNREFUSED)');
    expect(records[0]).toMatchObject({ allowed: false, status: 502 });
  });
});
