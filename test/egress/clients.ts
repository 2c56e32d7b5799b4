// Real origins and real clients for the egress proxy's tests, all on loopback: an HTTP and an
// HTTPS origin (its certificate made by the openssl CLI) counting the connections they accept,
// and clients that speak to a lane over its Unix socket or its TCP port.
import { execFileSync } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import { type AddressInfo, connect as netConnect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import tls from 'node:tls';
import type { Lane } from '../../src/egress/index.js';

export interface Origin {
  readonly port: number;
  /** TCP connections accepted so far. */
  accepted(): number;
  /** TCP connections open now. */
  open(): number;
  /** Request URLs as the origin received them, with their Host header. */
  readonly seen: { url: string; host: string | undefined }[];
  close(): Promise<void>;
}

export type Handler = (req: http.IncomingMessage, res: http.ServerResponse) => void;

export async function startOrigin(handler: Handler, tlsFiles?: Pem): Promise<Origin> {
  const seen: Origin['seen'] = [];
  const serve: Handler = (req, res) => {
    seen.push({ url: req.url ?? '', host: req.headers.host });
    handler(req, res);
  };
  const server = tlsFiles
    ? https.createServer({ key: tlsFiles.key, cert: tlsFiles.cert }, serve)
    : http.createServer(serve);
  let accepted = 0;
  let open = 0;
  server.on('connection', (socket: Socket) => {
    accepted += 1;
    open += 1;
    socket.on('close', () => {
      open -= 1;
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return {
    port: (server.address() as AddressInfo).port,
    accepted: () => accepted,
    open: () => open,
    seen,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

export interface Pem {
  readonly key: Buffer;
  readonly cert: Buffer;
}

/** A self-signed certificate for localhost and 127.0.0.1, valid one day. */
export function selfSigned(): Pem {
  const dir = mkdtempSync(join(tmpdir(), 'codexec-egress-pem-'));
  try {
    const key = join(dir, 'k');
    const cert = join(dir, 'c');
    const subject = ['-subj', '/CN=localhost', '-addext', 'subjectAltName=DNS:localhost,IP:127.0.0.1'];
    execFileSync(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'rsa:2048',
        '-nodes',
        ...subject,
        '-days',
        '1',
        '-keyout',
        key,
        '-out',
        cert,
      ],
      { stdio: 'ignore' },
    );
    return { key: readFileSync(key), cert: readFileSync(cert) };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Resolves once `check` holds (polled), or rejects after `ms`. */
export async function until(check: () => boolean, ms = 5_000): Promise<void> {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error(`not so within ${ms} ms`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** How a client reaches a lane. */
export type Via = { socketPath: string } | { host: string; port: number };

export function via(lane: Lane): Via {
  if (lane.socket !== undefined) return { socketPath: lane.socket };
  return { host: '127.0.0.1', port: lane.port as number };
}

export function rawSocket(to: Via): Socket {
  return 'socketPath' in to ? netConnect(to.socketPath) : netConnect(to.port, to.host);
}

export interface Answer {
  readonly status: number;
  readonly headers: http.IncomingHttpHeaders;
  readonly body: Buffer;
}

/** A plain-HTTP request through the proxy: `url` absolute (or not, to test that). */
export function proxied(
  to: Via,
  url: string,
  options: { method?: string; headers?: Record<string, string>; body?: Buffer } = {},
): Promise<Answer> {
  const req = http.request({
    ...to,
    method: options.method ?? 'GET',
    path: url,
    headers: options.headers,
    agent: false,
  });
  req.end(options.body);
  return answerOf(req);
}

export interface Tunnel {
  readonly status: number;
  readonly socket: Socket;
  /** Bytes that came with the answer (a refusal's body begins there). */
  readonly head: Buffer;
}

/** `CONNECT target` through the proxy. */
export function tunnel(to: Via, target: string): Promise<Tunnel> {
  const req = http.request({
    ...to,
    method: 'CONNECT',
    path: target,
    headers: { host: target },
    agent: false,
  });
  req.end();
  return new Promise((resolve, reject) => {
    req.on('error', reject);
    req.on('connect', (res: http.IncomingMessage, socket: Socket, head: Buffer) =>
      resolve({ status: res.statusCode ?? 0, socket, head }),
    );
  });
}

/** Everything `socket` receives until it closes. */
export async function readAll(socket: Socket): Promise<string> {
  const chunks: Buffer[] = [];
  socket.on('data', (chunk: Buffer) => chunks.push(chunk));
  // A reset after the answer is the server's to make: what came before it counts.
  socket.on('error', () => {});
  await new Promise((resolve) => socket.once('close', resolve));
  return Buffer.concat(chunks).toString();
}

/** Everything a refused CONNECT's socket sent before closing: the body of the refusal. */
export async function rest(t: Tunnel): Promise<string> {
  return t.head.toString() + (await readAll(t.socket));
}

/** An HTTPS GET through a CONNECT tunnel, TLS checked against `ca`. */
export async function httpsThrough(to: Via, target: string, path: string, ca: Buffer): Promise<Answer> {
  const t = await tunnel(to, target);
  if (t.status !== 200) throw new Error(`CONNECT answered ${t.status}: ${await rest(t)}`);
  const secure = tls.connect({ socket: t.socket, servername: 'localhost', ca });
  await once(secure, 'secureConnect');
  const req = http.request({ path, headers: { host: target }, createConnection: () => secure });
  req.end();
  return answerOf(req);
}

function answerOf(req: http.ClientRequest): Promise<Answer> {
  return new Promise((resolve, reject) => {
    req.on('error', reject);
    req.on('response', (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('error', reject);
      res.on('end', () =>
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }),
      );
    });
  });
}
