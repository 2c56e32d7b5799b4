// serve --http's /p/<session>/<port>/…: a server a session started (start_process expose_port),
// reached with its principal's token only. Requests and WebSocket upgrades go to the socket the
// port's forwarder listens on in the session's workspace (drivers/egress_forward.py --expose),
// which relays them to the session's own loopback; nothing else reaches that loopback. The
// socket lies where the session's code writes: it is opened as the socket inode there, never
// through a link code put in its place (to a host service's socket). The token stays here: the
// session's server never sees it.

import { closeSync, constants, fstatSync, openSync } from 'node:fs';
import { type IncomingMessage, request, type ServerResponse } from 'node:http';
import { connect, type Socket } from 'node:net';
import { basename, dirname } from 'node:path';
import type { Duplex } from 'node:stream';
import { at, endToEnd, valuesOf } from '../../util/index.js';

/** Where a principal's session serves a port: the forwarder's socket, or undefined. */
export type PortLookup = (principal: string, sessionId: string, port: number) => string | undefined;

export interface PortTarget {
  readonly sessionId: string;
  readonly port: number;
  /** The path (and query) the session's server gets: what follows /p/<session>/<port>. */
  readonly path: string;
}

const PREFIX = /^\/p\/(sess_[A-Za-z0-9]+)\/(\d{1,5})(\/[^#]*)?$/;
export function isPortPath(url: string): boolean {
  return url.startsWith('/p/');
}

/** /p/<session>/<port>[/rest][?query], or undefined when it is not one. */
export function portTarget(url: string): PortTarget | undefined {
  const [pathname = '', query] = splitQuery(url);
  const match = PREFIX.exec(pathname);
  const port = Number(match?.[2]);
  if (!match || port < 1 || port > 65535) return undefined;
  const rest = match[3] ?? '/';
  return { sessionId: match[1] as string, port, path: query === undefined ? rest : `${rest}?${query}` };
}

function splitQuery(url: string): [string, string | undefined] {
  const at = url.indexOf('?');
  return at === -1 ? [url, undefined] : [url.slice(0, at), url.slice(at + 1)];
}

/** The client's headers for the session's server: its own, but the token and hop-by-hop ones. */
const passedOn = (raw: readonly string[]) => endToEnd(raw, 'authorization');

/** How long a connection to a session's server may pass no byte either way. */
const IDLE_MS = 10 * 60_000;
/** Linux's O_PATH (node's fs.constants does not name it). */
const O_PATH = 0o10000000;

/**
 * A connection to the forwarder's socket at `path`, in a workspace the session's code may change
 * at will: the socket inode itself (an O_PATH descriptor, never following a link put at that name,
 * connected through /proc/self/fd), and none a sandbox did not bind (a root server's own sockets
 * are root's). Undefined when there is no such socket there.
 */
function forwarderConnection(path: string): Socket | undefined {
  let dir: number | undefined;
  let fd: number | undefined;
  try {
    dir = openSync(dirname(path), constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW);
    fd = openSync(at(dir, basename(path)), O_PATH | constants.O_NOFOLLOW);
    const stat = fstatSync(fd);
    const root = process.geteuid?.() === 0;
    if (!stat.isSocket() || (root && stat.uid === 0)) throw new Error('not a forwarder socket');
  } catch {
    if (fd !== undefined) closeSync(fd);
    return undefined;
  } finally {
    if (dir !== undefined) closeSync(dir);
  }
  const held = fd;
  const socket = connect(at(held));
  // A session's server that stops answering frees what it holds (a connection of the principal's).
  socket.setTimeout(IDLE_MS, () => socket.destroy());
  let closed = false;
  const release = () => {
    if (closed) return;
    closed = true;
    closeSync(held);
  };
  socket.once('connect', release);
  socket.once('close', release);
  return socket;
}

/** One request to the session's server through `socket`, its answer streamed back. */
export function servePort(
  req: IncomingMessage,
  res: ServerResponse,
  socket: string,
  target: PortTarget,
): void {
  const connection = forwarderConnection(socket);
  if (!connection) {
    res.writeHead(502, { 'content-type': 'text/plain; charset=utf-8', connection: 'close' });
    res.end(`nothing answers on port ${target.port} of session ${target.sessionId}\n`);
    return;
  }
  const upstream = request({
    createConnection: () => connection,
    method: req.method,
    path: target.path,
    headers: [...passedOn(req.rawHeaders), 'X-Forwarded-Prefix', `/p/${target.sessionId}/${target.port}`],
    setHost: false,
  });
  upstream.on('error', () => {
    if (res.headersSent) return void res.destroy();
    res.writeHead(502, { 'content-type': 'text/plain; charset=utf-8', connection: 'close' });
    res.end(`nothing answers on port ${target.port} of session ${target.sessionId}\n`);
  });
  upstream.on('response', (answer) => {
    answer.on('error', () => res.destroy());
    res.writeHead(answer.statusCode ?? 502, answer.statusMessage, endToEnd(answer.rawHeaders));
    answer.pipe(res);
  });
  req.on('error', () => upstream.destroy());
  res.on('close', () => {
    if (!res.writableFinished) upstream.destroy();
  });
  req.pipe(upstream);
}

/**
 * A WebSocket (or other) upgrade to the session's server: the request head is written to the
 * forwarder's socket as the client sent it (token left out), then bytes flow both ways.
 */
export function upgradePort(
  req: IncomingMessage,
  client: Duplex,
  head: Buffer,
  socket: string,
  target: PortTarget,
): void {
  const upstream = forwarderConnection(socket);
  if (!upstream) return void client.end(BAD_GATEWAY);
  const cut = () => {
    client.destroy();
    upstream.destroy();
  };
  client.on('error', cut);
  upstream.on('error', () => {
    if (!client.destroyed) client.end(BAD_GATEWAY);
  });
  upstream.once('connect', () => {
    const headers = [
      ...passedOn(req.rawHeaders),
      // The upgrade asked for, which is this hop's and the next's alike.
      'Connection',
      'Upgrade',
      ...valuesOf(req.rawHeaders, 'upgrade').flatMap((protocol) => ['Upgrade', protocol]),
      'X-Forwarded-Prefix',
      `/p/${target.sessionId}/${target.port}`,
    ];
    const lines = [`${req.method ?? 'GET'} ${target.path} HTTP/1.1`];
    for (let index = 0; index + 1 < headers.length; index += 2)
      lines.push(`${headers[index]}: ${headers[index + 1]}`);
    upstream.write(`${lines.join('\r\n')}\r\n\r\n`);
    if (head.length > 0) upstream.write(head);
    switched(upstream).then((answer) => {
      // Anything but 101 ends it: a pipe kept open on another answer would carry the client's
      // later requests (or, behind a proxy that reuses connections, other clients') past every check.
      if (!answer) return void client.end(NOT_SWITCHED);
      client.write(answer);
      client.pipe(upstream).pipe(client);
    }, cut);
  });
  client.on('close', () => upstream.destroy());
  upstream.on('close', () => client.destroy());
}

const BAD_GATEWAY = 'HTTP/1.1 502 Bad Gateway\r\nconnection: close\r\ncontent-length: 0\r\n\r\n';
const NOT_SWITCHED_BODY = "the session's server did not switch protocols\n";
const NOT_SWITCHED = `HTTP/1.1 502 Bad Gateway\r\ncontent-type: text/plain; charset=utf-8\r\nconnection: close\r\ncontent-length: ${NOT_SWITCHED_BODY.length}\r\n\r\n${NOT_SWITCHED_BODY}`;
/** The most of an upgrade's answer head read while waiting for its end. */
const MAX_ANSWER_HEAD = 16 * 1024;

/**
 * The session server's answer to an upgrade, read up to the end of its head: the bytes read (the
 * head and any frames after it) when it is `101 Switching Protocols`, else undefined.
 */
function switched(upstream: Socket): Promise<Buffer | undefined> {
  return new Promise((resolve) => {
    let read = Buffer.alloc(0);
    const onData = (chunk: Buffer) => {
      read = Buffer.concat([read, chunk]);
      const end = read.indexOf('\r\n\r\n');
      if (end === -1 && read.length < MAX_ANSWER_HEAD) return;
      upstream.off('data', onData);
      upstream.off('end', onEnd);
      upstream.pause();
      const status = /^HTTP\/1\.[01] (\d{3})/.exec(
        read.subarray(0, Math.max(0, end)).toString('latin1'),
      )?.[1];
      resolve(status === '101' ? read : undefined);
    };
    const onEnd = () => resolve(undefined);
    upstream.on('data', onData);
    upstream.once('end', onEnd);
  });
}
