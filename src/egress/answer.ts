// The lane's own answers (refusals, failures) and its records, shared by both handlers.
import { type ServerResponse, STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import { log } from '../util/index.js';
import type { EgressConnection, LaneUser } from './types.js';

/** How long a refused CONNECT's client may take to close after the answer. */
const LINGER_MS = 5_000;

/** The body of a refusal: `codexec egress: <target> refused: <reason>`. */
export function refusal(target: string, status: number, reason: string): string {
  return `codexec egress: ${target} ${status === 502 ? 'unreachable' : 'refused'}: ${reason}\n`;
}

/**
 * Answers a CONNECT's client on its raw socket and closes: what it sends meanwhile is read and
 * dropped (the socket closes when the client does, or after LINGER_MS).
 */
export function answerRaw(socket: Duplex, status: number, body: string): void {
  if (socket.destroyed) return;
  const text = Buffer.from(body);
  socket.resume();
  socket.end(
    `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? ''}\r\ncontent-type: text/plain; charset=utf-8\r\n` +
      `content-length: ${text.length}\r\nconnection: close\r\n\r\n${body}`,
  );
  setTimeout(() => socket.destroy(), LINGER_MS).unref();
}

/**
 * Records `connection` for `user`; false when its record throws (the caller then refuses what it
 * was about to let through: a connection nobody accounted for is not made).
 */
export function recorded(user: LaneUser, connection: EgressConnection): boolean {
  try {
    user.record(connection);
    return true;
  } catch (error) {
    log('error', `egress: recording ${connection.host}:${connection.port} failed: ${String(error)}`);
    return false;
  }
}

/** What a refusal adds to its record: the rule that decided, whether the user was asked. */
export type RefusalDetail = Partial<Pick<EgressConnection, 'rule' | 'asked'>>;

/**
 * Record a refused request to `target` (CONNECT's or a plain request's), unless nobody uses the
 * lane or the refusal is the proxy's own failure to record (500).
 */
export function recordRefusal(
  user: LaneUser | undefined,
  request: Pick<EgressConnection, 'host' | 'port' | 'method' | 'at'>,
  status: 403 | 500 | 502 | 503,
  reason: string,
  detail: RefusalDetail,
): void {
  if (user && status !== 500) recorded(user, { ...request, allowed: false, status, reason, ...detail });
}

/** Answers a plain-HTTP request with a short text; a response already under way is cut instead. */
export function answerPlain(res: ServerResponse, status: number, body: string): void {
  if (res.destroyed) return;
  if (res.headersSent) {
    res.destroy();
    return;
  }
  res.writeHead(status, {
    'content-type': 'text/plain; charset=utf-8',
    'content-length': Buffer.byteLength(body),
    connection: 'close',
  });
  res.end(body);
}
