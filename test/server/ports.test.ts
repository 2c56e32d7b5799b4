// Servers a session started, reached from outside (start_process expose_port): serve --http's
// /p/<session>/<port>/ for the session's principal only, HTTP and WebSocket; over stdio, a Unix
// socket. A real server, real sessions, a real python -m http.server and a WebSocket echo server.
import { createHash, randomBytes } from 'node:crypto';
import { chmodSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { connect, createServer as createNetServer } from 'node:net';
import { join } from 'node:path';
import type { Client } from '@modelcontextprotocol/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from '../helpers/eventually.js';
import { connectHttp, type HttpServer, startHttp } from '../helpers/http.js';
import { SANDBOX_MODE } from '../helpers/mode.js';
import { callTool, startServer, tempDir } from '../helpers/server.js';

const ALICE = 'alice-token-0123456789';
const BOB = 'bob-token-0123456789ab';

/** A WebSocket echo server (RFC 6455, text frames up to 125 bytes), standard library only. */
const WS_ECHO = String.raw`
import base64, hashlib, socket, threading
def serve(conn):
    head = b""
    while b"\r\n\r\n" not in head:
        head += conn.recv(4096)
    key = [l.split(b":", 1)[1].strip() for l in head.split(b"\r\n") if l.lower().startswith(b"sec-websocket-key")][0]
    accept = base64.b64encode(hashlib.sha1(key + b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11").digest())
    conn.sendall(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: " + accept + b"\r\n\r\n")
    while True:
        frame = conn.recv(2)
        if len(frame) < 2:
            return
        length = frame[1] & 0x7F
        mask = conn.recv(4)
        data = bytes(b ^ mask[i % 4] for i, b in enumerate(conn.recv(length)))
        conn.sendall(bytes([0x81, len(data)]) + data)
listener = socket.socket()
listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
listener.bind(("127.0.0.1", 9001))
listener.listen(8)
print("listening", flush=True)
while True:
    conn, _ = listener.accept()
    threading.Thread(target=serve, args=(conn,), daemon=True).start()
`;

interface Started {
  process_id: string;
  url?: string;
  socket?: string;
  exposed_port?: number;
}

/** GET `url` with the token: status and body. */
async function get(url: string, token?: string): Promise<{ status: number; body: string }> {
  const response = await fetch(url, { headers: token ? { authorization: `Bearer ${token}` } : {} });
  return { status: response.status, body: await response.text() };
}

/** A WebSocket handshake to `url` and one masked text frame: the status line, and the frame echoed. */
function webSocket(
  url: string,
  token: string | undefined,
  text: string,
): Promise<{ status: string; echo?: string }> {
  const { hostname, port, pathname } = new URL(url);
  const key = randomBytes(16).toString('base64');
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname);
    let got = Buffer.alloc(0);
    socket.on('error', reject);
    socket.on('connect', () => {
      socket.write(
        [
          `GET ${pathname} HTTP/1.1`,
          `Host: ${hostname}:${port}`,
          'Upgrade: websocket',
          'Connection: Upgrade',
          `Sec-WebSocket-Key: ${key}`,
          'Sec-WebSocket-Version: 13',
          ...(token ? [`Authorization: Bearer ${token}`] : []),
          '',
          '',
        ].join('\r\n'),
      );
    });
    socket.on('data', (chunk: Buffer) => {
      got = Buffer.concat([got, chunk]);
      const end = got.indexOf('\r\n\r\n');
      if (end === -1) return;
      const head = got.subarray(0, end).toString();
      const status = head.split('\r\n')[0] as string;
      if (!status.includes(' 101 ')) {
        socket.destroy();
        return resolve({ status });
      }
      const accept = createHash('sha1').update(`${key}258EAFA5-E914-47DA-95CA-C5AB0DC85B11`).digest('base64');
      if (!head.includes(accept)) return reject(new Error(`wrong Sec-WebSocket-Accept in ${head}`));
      const body = got.subarray(end + 4);
      if (body.length === 0 && !socket.readableEnded) {
        const payload = Buffer.from(text);
        const mask = randomBytes(4);
        const masked = Buffer.from(payload.map((byte, index) => byte ^ (mask[index % 4] as number)));
        socket.write(Buffer.concat([Buffer.from([0x81, 0x80 | payload.length]), mask, masked]));
        return;
      }
      if (body.length >= 2 && body.length >= 2 + ((body[1] as number) & 0x7f)) {
        socket.destroy();
        resolve({ status, echo: body.subarray(2, 2 + ((body[1] as number) & 0x7f)).toString() });
      }
    });
  });
}

describe.runIf(SANDBOX_MODE === 'namespace')('exposed ports over serve --http', () => {
  let server: HttpServer;
  let alice: Client;
  let bob: Client;
  let sessionId: string;

  beforeAll(async () => {
    const dir = tempDir();
    const tokens = join(dir, 'tokens.json');
    writeFileSync(tokens, JSON.stringify({ alice: ALICE, bob: BOB }));
    server = await startHttp({ env: { CODEXEC_HTTP_TOKENS: tokens } });
    alice = await connectHttp(server.url, ALICE, 'modern');
    bob = await connectHttp(server.url, BOB, 'legacy');
    sessionId = (await callTool<{ session_id: string }>(alice, 'start_session', { language: 'python' })).value
      .session_id;
  }, 60_000);

  afterAll(async () => {
    await alice?.close();
    await bob?.close();
    await server?.stop();
  });

  const expose = async (command: string, port: number, session = sessionId) =>
    (await callTool<Started>(alice, 'start_process', { session_id: session, command, expose_port: port }))
      .value;

  it('serves python -m http.server to its principal; another gets 404, no token 401', async () => {
    const started = await expose(
      'mkdir -p site && echo hello from the session > site/index.html && python3 -m http.server 8000 --bind 127.0.0.1 --directory site',
      8000,
    );
    expect(started.exposed_port).toBe(8000);
    expect(started.url).toBe(new URL(`/p/${sessionId}/8000/`, server.url).href);
    const url = started.url as string;
    expect(await eventually(async () => (await get(`${url}index.html`, ALICE)).status === 200)).toBe(true);
    expect(await get(`${url}index.html?x=1`, ALICE)).toEqual({
      status: 200,
      body: 'hello from the session\n',
    });
    expect((await get(`${url}index.html`, BOB)).status).toBe(404);
    expect((await get(`${url}index.html`)).status).toBe(401);
    // The token stays with the server: the session's server never saw it.
    const log = await callTool<{ output: string }>(alice, 'read_process_output', {
      process_id: started.process_id,
    });
    expect(log.value.output).toContain('GET /index.html?x=1');
    // A port nobody exposed, and one of an unknown session: the same 404.
    expect((await get(new URL(`/p/${sessionId}/8001/`, server.url).href, ALICE)).status).toBe(404);
    expect((await get(new URL('/p/sess_000000000000/8000/', server.url).href, ALICE)).status).toBe(404);
  });

  it('carries a WebSocket to its principal only', async () => {
    const started = await expose(`python3 -u -c '${WS_ECHO.replaceAll("'", `'"'"'`)}'`, 9001);
    const url = started.url as string;
    expect(
      await eventually(async () =>
        (await webSocket(url, ALICE, 'ping').catch(() => ({ status: '' }))).status.includes(' 101 '),
      ),
    ).toBe(true);
    expect(await webSocket(url, ALICE, 'hello over ws')).toEqual({
      status: 'HTTP/1.1 101 Switching Protocols',
      echo: 'hello over ws',
    });
    expect((await webSocket(url, BOB, 'x')).status).toMatch(/ 404 /);
    expect((await webSocket(url, undefined, 'x')).status).toMatch(/ 401 /);
  });

  it('carries an upgrade only when the session’s server switches protocols', async () => {
    // http.server answers an upgrade request with 200 and keeps the connection: no pipe may stay
    // open on it (it would carry later requests past every check).
    const started = await expose('python3 -m http.server 8006 --bind 127.0.0.1', 8006);
    const url = started.url as string;
    expect(await eventually(async () => (await get(url, ALICE)).status === 200)).toBe(true);
    expect((await webSocket(url, ALICE, 'x')).status).toBe('HTTP/1.1 502 Bad Gateway');
    await callTool(alice, 'kill_process', { process_id: started.process_id });
  });

  it('serves a node session’s server, and refuses a port exposed twice', async () => {
    const node = (await callTool<{ session_id: string }>(alice, 'start_session', { language: 'node' })).value
      .session_id;
    const server = `require("http").createServer((q, s) => s.end("node " + q.url)).listen(8080, "127.0.0.1")`;
    const started = await expose(`node -e '${server}'`, 8080, node);
    const url = started.url as string;
    expect(await eventually(async () => (await get(`${url}a/b`, ALICE)).body === 'node /a/b')).toBe(true);
    const again = await alice.callTool({
      name: 'start_process',
      arguments: { session_id: node, command: 'sleep 60', expose_port: 8080 },
    });
    expect(again.isError).toBe(true);
    expect(JSON.stringify(again.content)).toContain('port 8080 of session');
    await callTool(alice, 'close_session', { session_id: node });
  });

  it('never follows a link the session’s code puts at its socket (to a host service’s socket)', async () => {
    // A host service on a Unix socket: the server must never connect to it for alice.
    const dir = tempDir('codexec-host-service-');
    chmodSync(dir, 0o755);
    const hostSocket = join(dir, 'service.sock');
    let reached = 0;
    const service = createNetServer((socket) => {
      reached += 1;
      socket.end('HTTP/1.1 200 OK\r\ncontent-length: 4\r\n\r\nHOST');
    });
    await new Promise<void>((resolve) => service.listen(hostSocket, resolve));
    chmodSync(hostSocket, 0o777);
    try {
      const started = await expose('sleep 600', 8004);
      const url = started.url as string;
      const swap = await callTool<{ stdout: string; stderr: string }>(alice, 'send_to_session', {
        session_id: sessionId,
        code: [
          'import os, time',
          'name = ".codexec-port-8004.sock"',
          'for _ in range(100):',
          '    if os.path.exists(name): break',
          '    time.sleep(0.1)',
          'os.remove(name)',
          `os.symlink(${JSON.stringify(hostSocket)}, name)`,
          'print(os.path.islink(name))',
        ].join('\n'),
      });
      expect(swap.value.stdout).toBe('True\n');
      const answer = await get(url, ALICE);
      expect(answer.status).toBe(502);
      expect(answer.body).not.toContain('HOST');
      expect((await webSocket(url, ALICE, 'x')).status).toMatch(/ 502 /);
      expect(reached).toBe(0);
      await callTool(alice, 'kill_process', { process_id: started.process_id });
    } finally {
      service.close();
    }
  });

  it('dies with its process and with its session', async () => {
    const session = (await callTool<{ session_id: string }>(alice, 'start_session', { language: 'bash' }))
      .value.session_id;
    const started = await expose('python3 -m http.server 8002 --bind 127.0.0.1', 8002, session);
    const url = started.url as string;
    expect(await eventually(async () => (await get(url, ALICE)).status === 200)).toBe(true);
    await callTool(alice, 'kill_process', { process_id: started.process_id });
    expect((await get(url, ALICE)).status).toBe(404);
    const again = await expose('python3 -m http.server 8002 --bind 127.0.0.1', 8002, session);
    expect(await eventually(async () => (await get(again.url as string, ALICE)).status === 200)).toBe(true);
    await callTool(alice, 'close_session', { session_id: session });
    expect((await get(again.url as string, ALICE)).status).toBe(404);
  });
});

describe.runIf(SANDBOX_MODE === 'namespace')('an exposed port over stdio', () => {
  it('is a Unix socket the local user reaches', async () => {
    const server = await startServer();
    try {
      const session = (
        await callTool<{ session_id: string }>(server.client, 'start_session', { language: 'python' })
      ).value.session_id;
      const started = (
        await callTool<Started>(server.client, 'start_process', {
          session_id: session,
          command: 'echo stdio > index.html && python3 -m http.server 8003 --bind 127.0.0.1',
          expose_port: 8003,
        })
      ).value;
      expect(started.url).toBeUndefined();
      const socketPath = started.socket as string;
      expect(socketPath).toMatch(/\.codexec-port-8003\.sock$/);
      const body = () =>
        new Promise<string>((resolve) => {
          const req = request({ socketPath, path: '/index.html' }, (res) => {
            let text = '';
            res.on('data', (chunk) => {
              text += chunk;
            });
            res.on('end', () => resolve(text));
          });
          req.on('error', () => resolve(''));
          req.end();
        });
      expect(await eventually(async () => (await body()) === 'stdio\n')).toBe(true);
    } finally {
      await server.close();
    }
  });
});

describe.runIf(SANDBOX_MODE === 'landlock')('an exposed port in landlock mode', () => {
  it('is refused: no loopback of its own to listen on', async () => {
    const server = await startServer();
    try {
      const session = (
        await callTool<{ session_id: string }>(server.client, 'start_session', { language: 'python' })
      ).value.session_id;
      const result = await server.client.callTool({
        name: 'start_process',
        arguments: { session_id: session, command: 'sleep 1', expose_port: 8000 },
      });
      expect(result.isError).toBe(true);
      expect(JSON.stringify(result.content)).toContain(
        'expose_port needs a session whose sandbox has a loopback of its own',
      );
    } finally {
      await server.close();
    }
  });
});
