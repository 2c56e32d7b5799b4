// serve --http's /p/<session>/<port>/…: a server a session started (start_process expose_port),
// reached with its principal's token only. Requests and WebSocket upgrades go to the socket the
// port's forwarder listens on in the session's workspace (drivers/egress_forward.py --expose),
// which relays them to the session's own loopback; nothing else reaches that loopback. The
// token stays here: the session's server never sees it.
import { type IncomingMessage, request, type ServerResponse } from 'node:http';
import { connect } from 'node:net';
import type { Duplex } from 'node:stream';

/** Where a principal's session serves a port: the forwarder's socket, or undefined. */
export type PortLookup = (principal: string, sessionId: string, port: number) => string | undefined;

export interface PortTarget {
  readonly sessionId: string;
  readonly port: number;
  /** The path (and query) the session's server gets: what follows /p/<session>/<port>. */
  readonly path: string;
}

const PREFIX = /^\/p\/(sess_[A-Za-z0-9]+)\/(\d{1,5})(\/[^#]*)?$/;
const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'proxy-authorization',
  'proxy-authenticate',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
]);

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
function passedOn(raw: readonly string[], keep: readonly string[] = []): string[] {
  const kept: string[] = [];
  for (let index = 0; index + 1 < raw.length; index += 2) {
    const name = (raw[index] as string).toLowerCase();
    if (name === 'authorization' || (HOP_BY_HOP.has(name) && !keep.includes(name))) continue;
    kept.push(raw[index] as string, raw[index + 1] as string);
  }
  return kept;
}

/** One request to the session's server through `socket`, its answer streamed back. */
export function servePort(
  req: IncomingMessage,
  res: ServerResponse,
  socket: string,
  target: PortTarget,
): void {
  const upstream = request({
    socketPath: socket,
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
    res.writeHead(answer.statusCode ?? 502, answer.statusMessage, passedOn(answer.rawHeaders));
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
  const upstream = connect(socket);
  const cut = () => {
    client.destroy();
    upstream.destroy();
  };
  client.on('error', cut);
  upstream.on('error', () => {
    if (!client.destroyed)
      client.end('HTTP/1.1 502 Bad Gateway\r\nconnection: close\r\ncontent-length: 0\r\n\r\n');
  });
  upstream.once('connect', () => {
    const headers = passedOn(req.rawHeaders, ['connection', 'upgrade']);
    const lines = [`${req.method ?? 'GET'} ${target.path} HTTP/1.1`];
    for (let index = 0; index + 1 < headers.length; index += 2)
      lines.push(`${headers[index]}: ${headers[index + 1]}`);
    upstream.write(`${lines.join('\r\n')}\r\n\r\n`);
    if (head.length > 0) upstream.write(head);
    client.pipe(upstream).pipe(client);
  });
  client.on('close', () => upstream.destroy());
  upstream.on('close', () => client.destroy());
}
