// The egress proxy: asking a person, and the lane itself: its socket, its bounds, its
// close, and clients that misbehave.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { chmodSync, existsSync, mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { MAX_OPEN, openLane } from '../../src/egress/proxy.js';
import { bench, userOf } from './bench.js';
import { httpsThrough, proxied, rawSocket, readAll, rest, tunnel, until, via } from './clients.js';

const b = bench();

describe('ask', () => {
  it('is asked for an unlisted target only; true lets it through, false refuses', async () => {
    const questions: string[] = [];
    let answer = true;
    const ask = async (host: string, port: number) => {
      questions.push(`${host}:${port}`);
      return answer;
    };
    const { user, records } = userOf(`localhost:${b.web.port}`, { denied: `localhost:${b.other.port}`, ask });
    const lane = await b.open('socket', user);
    const target = `127.0.0.1:${b.secure.port}`;
    expect((await httpsThrough(via(lane), target, '/', b.pem.cert)).status).toBe(200);
    expect(records.at(-1)).toMatchObject({ allowed: true, asked: true, address: '127.0.0.1' });
    answer = false;
    const before = b.secure.accepted();
    const t = await tunnel(via(lane), target);
    expect(t.status).toBe(403);
    expect(await rest(t)).toContain('refused when asked');
    expect(b.secure.accepted()).toBe(before);
    expect(records.at(-1)).toMatchObject({ allowed: false, asked: true });
    // Never asked for a listed target, nor a denied one.
    answer = true;
    await proxied(via(lane), `http://localhost:${b.web.port}/`, {
      headers: { host: `localhost:${b.web.port}` },
    });
    expect((await tunnel(via(lane), `localhost:${b.other.port}`)).status).toBe(403);
    expect(questions).toEqual([target, target]);
  });

  it('an approved name reaches public addresses only; a failed question is a no', async () => {
    const { user } = userOf('', { ask: async () => true });
    const lane = await b.open('socket', user);
    const before = b.secure.accepted();
    const t = await tunnel(via(lane), `localhost:${b.secure.port}`);
    expect(t.status).toBe(403);
    expect(await rest(t)).toContain('an internal address');
    lane.use(userOf('', { ask: () => Promise.reject(new Error('no one to ask')) }).user);
    expect((await tunnel(via(lane), `127.0.0.1:${b.secure.port}`)).status).toBe(403);
    expect(b.secure.accepted()).toBe(before);
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
    const lane = await b.open('socket', user);
    const before = b.secure.accepted();
    const req = tunnel(via(lane), `127.0.0.1:${b.secure.port}`);
    await question;
    await lane.close();
    await expect(req).rejects.toThrow();
    expect(b.secure.accepted()).toBe(before);
    expect(records).toMatchObject([{ allowed: false, asked: true }]);
  });
});

describe('the lane itself', () => {
  it('opens its socket for every uid (0666)', async () => {
    const lane = await b.open('socket');
    expect(statSync(lane.socket as string).mode & 0o777).toBe(0o666);
  });

  // Only b.root can start a process as another uid; the mode above is checked for everyone.
  it.skipIf(process.getuid?.() !== 0)('lets uid 65534 (a sandbox user) connect to its socket', async () => {
    const { user } = userOf(`localhost:${b.web.port}`);
    const lane = await b.open('socket', user);
    // The directories above it are the test's own (0700): let that uid through them.
    chmodSync(b.root, 0o711);
    chmodSync(dirname(lane.socket as string), 0o711);
    const script = `const s = require('node:net').connect(process.argv[1]);
      s.on('error', (e) => { console.log(e.code); });
      s.on('data', (d) => { console.log(String(d).split('\\r\\n')[0]); s.destroy(); });
      s.write('CONNECT localhost:${b.web.port} HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n');`;
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
    const path = join(mkdtempSync(join(b.root, 'lane-')), 'egress.sock');
    writeFileSync(path, 'not a socket');
    await expect(openLane({ socket: path })).rejects.toThrow(/EADDRINUSE/);
    expect(readFileSync(path, 'utf8')).toBe('not a socket');
  });

  it('passes bytes sent right after the CONNECT header, and a half-close', async () => {
    const { user } = userOf(`localhost:${b.web.port}`);
    const lane = await b.open('socket', user);
    const socket = rawSocket(via(lane));
    const chunks: Buffer[] = [];
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    // One write: the origin's request travels as the CONNECT's `head`; then our end of sending.
    socket.end(
      `CONNECT localhost:${b.web.port} HTTP/1.1\r\nHost: localhost:${b.web.port}\r\n\r\n` +
        `GET / HTTP/1.0\r\nHost: localhost:${b.web.port}\r\n\r\n`,
    );
    await once(socket, 'close');
    const text = Buffer.concat(chunks).toString();
    expect(text).toMatch(/^HTTP\/1\.1 200 Connection Established\r\n\r\nHTTP\/1\.1 200 OK\r\n/);
    expect(text.endsWith('hello')).toBe(true);
  });

  it('a client gone mid-request: the origin side closes too, the lane goes on', async () => {
    const { user } = userOf(`localhost:${b.web.port}`);
    const lane = await b.open('tcp', user);
    const before = b.web.open();
    const socket = rawSocket(via(lane));
    const gone = readAll(socket);
    socket.write(
      `GET http://localhost:${b.web.port}/never HTTP/1.1\r\nHost: localhost:${b.web.port}\r\n\r\n`,
    );
    await until(() => b.web.open() === before + 1);
    socket.resetAndDestroy();
    await gone;
    await until(() => b.web.open() === before);
    const answer = await proxied(via(lane), `http://localhost:${b.web.port}/`, {
      headers: { host: `localhost:${b.web.port}` },
    });
    expect(answer.body.toString()).toBe('hello');
  });

  it(`answers 503 beyond ${MAX_OPEN} open tunnels, and takes more once one closes`, async () => {
    const { user, records } = userOf(`localhost:${b.web.port}`);
    const lane = await b.open('tcp', user);
    const before = b.web.open();
    const open64 = await Promise.all(
      Array.from({ length: MAX_OPEN }, () => tunnel(via(lane), `localhost:${b.web.port}`)),
    );
    expect(open64.every((t) => t.status === 200)).toBe(true);
    const extra = await tunnel(via(lane), `localhost:${b.web.port}`);
    expect(extra.status).toBe(503);
    expect(records.at(-1)).toMatchObject({ allowed: false, status: 503 });
    // Reset, not ended: the lane frees its place when the client's socket closes, before it cuts
    // the origin's side. An end would pass on to the origin first (a half-close), which could then
    // close before the lane's side of the client does.
    open64[0]?.socket.resetAndDestroy();
    // Once the lane has seen that close (the origin's side of it ends with it), one more fits.
    await until(() => b.web.open() === before + MAX_OPEN - 1);
    expect((await tunnel(via(lane), `localhost:${b.web.port}`)).status).toBe(200);
    for (const t of open64) t.socket.destroy();
  });

  it('close() ends open tunnels, unlinks the socket, and is idempotent', async () => {
    const { user } = userOf(`localhost:${b.secure.port}`);
    const lane = await b.open('socket', user);
    const before = b.secure.open();
    const t = await tunnel(via(lane), `localhost:${b.secure.port}`);
    expect(t.status).toBe(200);
    await until(() => b.secure.open() === before + 1);
    const closed = once(t.socket, 'close');
    await Promise.all([lane.close(), lane.close()]);
    await closed;
    await until(() => b.secure.open() === before);
    expect(existsSync(lane.socket as string)).toBe(false);
    await lane.close();
  });

  it.each(['socket', 'tcp'] as const)('survives garbage and a client gone mid-tunnel (%s)', async (kind) => {
    const { user } = userOf(`localhost:${b.secure.port}, localhost:${b.web.port}`);
    const lane = await b.open(kind, user);
    const garbage = rawSocket(via(lane));
    const said = readAll(garbage);
    garbage.write(randomBytes(4096));
    garbage.write('\r\n\r\nCONNECT \0\0 HTTP/9\r\n\r\n');
    expect(await said).toMatch(/^HTTP\/1\.1 400 /);
    const before = b.web.open();
    const t = await tunnel(via(lane), `localhost:${b.web.port}`);
    expect(t.status).toBe(200);
    await until(() => b.web.open() === before + 1);
    const gone = readAll(t.socket);
    // Half a request: the origin waits for the rest, so only the lane's cut can close its side.
    t.socket.write(`GET / HTTP/1.1\r\nHost: localhost:${b.web.port}\r\n`);
    await new Promise((resolve) => setTimeout(resolve, 50));
    // A TCP reset (RST): only the lane's cut closes the origin's side. A Unix socket has no reset:
    // its close reads as an end of stream, passed on.
    if (kind === 'tcp') t.socket.resetAndDestroy();
    else t.socket.destroy();
    await gone;
    await until(() => b.web.open() === before);
    const answer = await proxied(via(lane), `http://localhost:${b.web.port}/`, {
      headers: { host: `localhost:${b.web.port}` },
    });
    expect(answer.body.toString()).toBe('hello');
    expect((await httpsThrough(via(lane), `localhost:${b.secure.port}`, '/', b.pem.cert)).status).toBe(200);
  });
});
