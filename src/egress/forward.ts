// Plain HTTP through the proxy: `GET http://host:port/path` decided like a CONNECT, then sent to
// the checked address in origin form. The Host header must name the same target (the proxy never
// lets a client steer an origin's virtual hosts past the rules), hop-by-hop headers stay on this
// hop, and the answer comes back as the origin gave it: redirects too, never followed here (the
// client's next request is checked anew). One record per request.
import { request as httpRequest, type IncomingMessage, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { endToEnd, isoTime, valuesOf } from '../util/index.js';
import { admit, codeOf, decidedBy, dial } from './admit.js';
import { answerPlain, type RefusalDetail, recorded, recordRefusal, refusal } from './answer.js';
import { parseAuthority, sameTarget, shown, type Target } from './target.js';
import type { LaneContext } from './types.js';

export async function forward(lane: LaneContext, req: IncomingMessage, res: ServerResponse) {
  const at = isoTime();
  const user = lane.user;
  const url = req.url ?? '';
  if (url.startsWith('/') || url === '*')
    return answerPlain(
      res,
      400,
      'codexec egress: this is a proxy: ask it for http://host/path, or CONNECT host:port\n',
    );
  const parts = /^http:\/\/([^/?#]*)([^#]*)$/i.exec(url);
  const target = parts && parseAuthority(parts[1] as string, 80);
  if (!parts || !target)
    return answerPlain(
      res,
      400,
      `codexec egress: not an http://host[:port]/path URL (CONNECT for https): ${JSON.stringify(url)}\n`,
    );
  const path = parts[2] === '' ? '/' : parts[2]?.startsWith('?') ? `/${parts[2]}` : (parts[2] as string);

  let release: (() => void) | undefined;
  const method = req.method ?? 'GET';
  const refuse = (status: 403 | 500 | 502 | 503, reason: string, detail: RefusalDetail = {}) => {
    release?.();
    recordRefusal(user, { host: target.host, port: target.port, method, at }, status, reason, detail);
    answerPlain(res, status, refusal(shown(target), status, reason));
  };
  if (!user) return refuse(403, 'no run is using this proxy now');
  // A credential goes over HTTPS to its hosts only: its placeholder in plain HTTP goes nowhere.
  const misplaced = lane.credentials?.misplaced(url, req.rawHeaders);
  if (misplaced)
    return refuse(
      403,
      `${misplaced.credential.name}'s placeholder is sent over HTTPS to its hosts only (found in ${misplaced.where})`,
    );
  const host = hostHeader(req, target);
  if (host === undefined) return refuse(403, 'Host header differs from the request target');
  release = lane.acquire();
  if (!release) return refuse(503, 'too many connections open through this proxy');
  res.once('close', release);

  const admission = await admit(lane, user, target);
  const extra = decidedBy(admission);
  if (!admission.allowed) return refuse(admission.status, admission.reason, extra);
  let socket: Socket;
  let address: string;
  try {
    ({ socket, address } = await dial(lane, admission.addresses, target.port));
  } catch (error) {
    return refuse(502, `could not connect (${codeOf(error)})`, extra);
  }
  if (res.destroyed) {
    socket.destroy();
    return refuse(403, 'the client left before the connection was made', extra);
  }
  if (
    !recorded(user, { host: target.host, port: target.port, method, at, allowed: true, address, ...extra })
  ) {
    socket.destroy();
    return refuse(500, 'the request could not be recorded');
  }
  try {
    relay(req, res, socket, { method, path, headers: outgoing(req, host) });
  } catch (error) {
    // Node's client refuses what its server let in (a path or a header it cannot send).
    socket.destroy();
    answerPlain(res, 400, `codexec egress: the request cannot be passed on (${codeOf(error)})\n`);
  }
}

/** The request to the origin on `socket`, and its answer back to the client as it comes. */
function relay(
  req: IncomingMessage,
  res: ServerResponse,
  socket: Socket,
  head: { method: string; path: string; headers: string[] },
): void {
  const upstream = httpRequest({ ...head, setHost: false, createConnection: () => socket });
  upstream.on('error', (error) =>
    answerPlain(res, 502, `codexec egress: the origin failed (${codeOf(error)})\n`),
  );
  upstream.on('response', (answer) => {
    answer.on('error', () => res.destroy());
    if (passHead(res, answer, answer.statusMessage, endToEnd(answer.rawHeaders))) answer.pipe(res);
  });
  req.on('error', () => upstream.destroy());
  res.on('close', () => {
    if (!res.writableFinished) upstream.destroy();
  });
  req.pipe(upstream);
}

/**
 * The origin's status line and `headers` on to the client; false, the client answered 502 and the
 * origin's answer dropped, where node refuses to send them (a header with an invalid character).
 */
export function passHead(
  res: ServerResponse,
  answer: IncomingMessage,
  message: string | undefined,
  headers: readonly string[],
): boolean {
  try {
    res.sendDate = false;
    res.writeHead(answer.statusCode ?? 502, message, headers as string[]);
    return true;
  } catch (error) {
    answer.destroy();
    answerPlain(res, 502, `codexec egress: the origin's answer cannot be passed on (${codeOf(error)})\n`);
    return false;
  }
}

/**
 * The Host header to send: the client's, when it names the target (the port may be left out when
 * it is the scheme's, `fallback`), or the target when it sent none; undefined when it names
 * another (or several).
 */
export function hostHeader(req: IncomingMessage, target: Target, fallback = 80): string | undefined {
  const given = valuesOf(req.rawHeaders, 'host');
  if (given.length === 0) return shown(target).replace(new RegExp(`:${fallback}$`), '');
  if (given.length > 1) return undefined;
  const named = parseAuthority(given[0] as string, fallback);
  return named && sameTarget(named, target) ? (given[0] as string) : undefined;
}

/** The request's end-to-end headers as the client wrote them, Host checked, framing node's own. */
function outgoing(req: IncomingMessage, host: string): string[] {
  // One request per connection to the origin: each is checked and connected anew, none left idle.
  const headers = ['Host', host, ...endToEnd(req.rawHeaders, 'host'), 'Connection', 'close'];
  // Node read the chunked body apart; it chunks it again on the way out.
  if (req.headers['transfer-encoding'] !== undefined) headers.push('Transfer-Encoding', 'chunked');
  return headers;
}
