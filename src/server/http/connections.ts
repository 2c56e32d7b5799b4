import type { Server } from 'node:http';
import type { Socket } from 'node:net';
import { log } from '../../util/index.js';

const TOO_MANY = JSON.stringify({
  jsonrpc: '2.0',
  id: null,
  error: { code: -32000, message: 'too many connections (CODEXEC_HTTP_MAX_CONNECTIONS); retry later' },
});
const TOO_MANY_RESPONSE =
  'HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nConnection: close\r\n' +
  `Retry-After: 1\r\nContent-Length: ${Buffer.byteLength(TOO_MANY)}\r\n\r\n${TOO_MANY}`;

/** How long a refused connection may read its 503 before it is cut. */
const REFUSED_GRACE_MS = 1000;
/** At most one stderr line a minute about refusals, however many there are. */
const WARN_EVERY_MS = 60_000;

export interface ConnectionBounds {
  /** Whether this connection was refused: its requests (already 503'd) must not be served. */
  refused(socket: Socket): boolean;
}

/**
 * At most `max` connections at once. A connection past the cap takes the place of the oldest one
 * that has not yet sent a whole request head (open and silent, or trickling headers: what an
 * attacker holds), so such sockets cannot lock callers out; connections that have sent a request
 * are never cut for a newcomer (their idle time is bounded by the keep-alive timeout instead).
 * When every connection has, the newcomer is answered 503 and closed at once.
 */
export function boundConnections(server: Server, max: number): ConnectionBounds {
  const all = new Set<Socket>();
  // Insertion order is age order: the first entry is the oldest connection without a request.
  const unproven = new Set<Socket>();
  const refused = new WeakSet<Socket>();
  let warned = Number.NEGATIVE_INFINITY;
  server.on('connection', (socket: Socket) => {
    if (all.size >= max) {
      const oldest = unproven.values().next();
      if (oldest.done) {
        // end(), not destroy(): closing with the client's request unread would reset the
        // connection, and the 503 with it.
        refused.add(socket);
        if (Date.now() - warned >= WARN_EVERY_MS) {
          warned = Date.now();
          log(
            'warn',
            `http: ${max} connections open, each in use: refusing new ones (CODEXEC_HTTP_MAX_CONNECTIONS)`,
          );
        }
        socket.end(TOO_MANY_RESPONSE);
        setTimeout(() => socket.destroy(), REFUSED_GRACE_MS).unref();
        return;
      }
      unproven.delete(oldest.value);
      all.delete(oldest.value);
      oldest.value.destroy();
    }
    all.add(socket);
    unproven.add(socket);
    socket.once('close', () => {
      all.delete(socket);
      unproven.delete(socket);
    });
  });
  // 'request' comes once a request's head has arrived whole: the connection is in use.
  server.on('request', (req: { socket: Socket }) => unproven.delete(req.socket));
  return { refused: (socket) => refused.has(socket) };
}
