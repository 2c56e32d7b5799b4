// CONNECT host:port: decided and resolved by the lane, then a byte pipe both ways: the client's
// TLS runs end to end with the target, but for a credential's host (CODEXEC_CREDENTIALS), whose
// TLS ends in the proxy (intercept.ts). One record per CONNECT.
import type { IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { isoTime } from '../util/index.js';
import { admit, codeOf, decidedBy, dial } from './admit.js';
import { answerRaw, type RefusalDetail, recorded, recordRefusal, refusal } from './answer.js';
import type { Credentials } from './credentials.js';
import { intercept } from './intercept.js';
import { parseAuthority, shown } from './target.js';
import type { LaneContext } from './types.js';

export async function tunnel(lane: LaneContext, req: IncomingMessage, client: Duplex, head: Buffer) {
  const at = isoTime();
  const user = lane.user;
  // A client's reset destroys its socket; 'close' (below, or the lane's) does the rest.
  client.on('error', () => {});
  const target = parseAuthority(req.url ?? '');
  if (!target)
    return answerRaw(
      client,
      400,
      `codexec egress: CONNECT needs host:port, not ${JSON.stringify(req.url)}\n`,
    );
  let release: (() => void) | undefined;
  const refuse = (status: 403 | 500 | 502 | 503, reason: string, detail: RefusalDetail = {}) => {
    release?.();
    const request = { host: target.host, port: target.port, method: 'CONNECT', at };
    recordRefusal(user, request, status, reason, detail);
    answerRaw(client, status, refusal(shown(target), status, reason));
  };
  if (!user) return refuse(403, 'no run is using this proxy now');
  const misplaced = lane.credentials?.misplaced(req.url ?? '', req.rawHeaders);
  if (misplaced)
    return refuse(
      403,
      `${misplaced.credential.name}'s placeholder may not be sent in a CONNECT (found in ${misplaced.where})`,
    );
  release = lane.acquire();
  if (!release) return refuse(503, 'too many connections open through this proxy');
  client.once('close', release);

  const admission = await admit(lane, user, target);
  const extra = decidedBy(admission);
  if (!admission.allowed) return refuse(admission.status, admission.reason, extra);
  if (client.destroyed) return refuse(403, 'the client left before the connection was made', extra);
  const connection = { host: target.host, port: target.port, method: 'CONNECT', at, allowed: true, ...extra };
  // A credential's host: TLS ends here, so that its placeholder can become its value.
  if (lane.credentials?.for(target.host, target.port).length) {
    if (!recorded(user, connection)) return refuse(500, 'the connection could not be recorded');
    return intercept(
      lane as LaneContext & { credentials: Credentials },
      user,
      target,
      admission,
      client as Socket,
      head,
    );
  }
  let upstream: Socket;
  let address: string;
  try {
    ({ socket: upstream, address } = await dial(lane, admission.addresses, target.port));
  } catch (error) {
    return refuse(502, `could not connect (${codeOf(error)})`, extra);
  }
  if (client.destroyed) {
    upstream.destroy();
    return refuse(403, 'the client left before the connection was made', extra);
  }
  if (!recorded(user, { ...connection, address })) {
    upstream.destroy();
    return refuse(500, 'the connection could not be recorded');
  }
  splice(client as Socket, upstream, head);
}

/** Bytes both ways; an end of sending passes on (half-close), a reset or a destroy cuts both. */
function splice(client: Socket, upstream: Socket, head: Buffer): void {
  // Idle tunnels stay: only their own ends, or the lane's close, end them.
  client.setTimeout(0);
  upstream.on('error', () => {});
  const cut = (from: Socket, other: Socket) => () => {
    if (!from.readableEnded) other.destroy();
  };
  client.on('close', cut(client, upstream));
  upstream.on('close', cut(upstream, client));
  client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
  if (head.length > 0) upstream.write(head);
  client.pipe(upstream);
  upstream.pipe(client);
}
