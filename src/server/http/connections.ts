import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { log } from '../../util/index.js';

/** How long a refused connection may read its 503 before it is cut. */
const REFUSED_GRACE_MS = 1000;
/** At most one stderr line a minute about each kind of refusal, however many there are. */
const WARN_EVERY_MS = 60_000;

export interface ConnectionLimits {
  /** CODEXEC_HTTP_MAX_CONNECTIONS: open at once. */
  readonly max: number;
  /** CODEXEC_HTTP_MAX_CONNECTIONS_PER_ADDRESS: open and not yet authenticated, per client address. */
  readonly perAddress: number;
}

export interface ConnectionBounds {
  /** Whether this connection was refused: its requests (already 503'd) must not be served. */
  refused(socket: Socket): boolean;
  /** The connection made an authenticated request: kept before the others, beyond its address's bound. */
  trust(socket: Socket): void;
}

type Full = 'server' | 'address';

const SETTING: Record<Full, string> = {
  server: 'CODEXEC_HTTP_MAX_CONNECTIONS',
  address: 'CODEXEC_HTTP_MAX_CONNECTIONS_PER_ADDRESS',
};

/**
 * At most `max` connections at once, and at most `perAddress` from one client address that have
 * not made an authenticated request. Anyone can open a connection and keep it busy with /healthz,
 * so only a connection that showed a token (or a replica's signature) holds its place: a newcomer
 * past a bound takes the place of the oldest connection that has not, an idle one first (one of
 * its own address's for the address bound). When every connection in its way has, the newcomer is
 * answered 503 and closed at once. A connection that loses its place while idle is answered the
 * same 503: a new connection's request may be on its way unread (a burst of a token holder's
 * connections arrives before any of them is read), and its client reads why instead of a reset.
 * One put out while answering is closed.
 */
export function boundConnections(server: Server, limits: ConnectionLimits): ConnectionBounds {
  const open = new OpenConnections();
  const refused = new WeakSet<Socket>();
  const warned: Record<Full, number> = {
    server: Number.NEGATIVE_INFINITY,
    address: Number.NEGATIVE_INFINITY,
  };
  server.on('connection', (socket: Socket) => {
    const address = addressKey(socket.remoteAddress);
    const full = makeRoom(open, address, limits, (victim, bound) => {
      if (open.busy(victim)) return open.close(victim);
      open.forget(victim);
      refuse(victim, bound);
    });
    if (full === undefined) return open.add(socket, address);
    if (Date.now() - warned[full] >= WARN_EVERY_MS) {
      warned[full] = Date.now();
      log('warn', refusalLine(full, address, limits));
    }
    refuse(socket, full);
  });
  /** Answer 503 on `socket` and close it; what it asks is never served. */
  const refuse = (socket: Socket, full: Full) => {
    refused.add(socket);
    // end(), not destroy(): closing with the client's request unread would reset the
    // connection, and the 503 with it.
    socket.end(tooMany(full));
    setTimeout(() => socket.destroy(), REFUSED_GRACE_MS).unref();
  };
  server.on('request', (req: IncomingMessage, res: ServerResponse) => open.answering(req.socket, res));
  return { refused: (socket) => refused.has(socket), trust: (socket) => open.trust(socket) };
}

/** Put out what must go for one more connection from `address`; the bound in the way if nothing can. */
function makeRoom(
  open: OpenConnections,
  address: string,
  limits: ConnectionLimits,
  putOut: (victim: Socket, bound: Full) => void,
): Full | undefined {
  if (open.anonymousFrom(address) >= limits.perAddress) {
    const victim = open.oldestAnonymous(address, true);
    if (!victim) return 'address';
    putOut(victim, 'address');
  }
  if (open.size >= limits.max) {
    const victim = open.oldestAnonymous(undefined, true) ?? open.oldestAnonymous(undefined, false);
    if (!victim) return 'server';
    putOut(victim, 'server');
  }
  return undefined;
}

/** The open connections, which of them are still anonymous (oldest first) and which are answering. */
class OpenConnections {
  private readonly all = new Set<Socket>();
  private readonly anonymous = new Set<Socket>();
  private readonly byAddress = new Map<string, Set<Socket>>();
  private readonly addressOf = new Map<Socket, string>();
  private readonly inFlight = new Map<Socket, number>();

  get size(): number {
    return this.all.size;
  }

  add(socket: Socket, address: string): void {
    this.all.add(socket);
    this.anonymous.add(socket);
    this.addressOf.set(socket, address);
    const mates = this.byAddress.get(address) ?? new Set<Socket>();
    mates.add(socket);
    this.byAddress.set(address, mates);
    socket.once('close', () => this.remove(socket));
  }

  close(socket: Socket): void {
    this.remove(socket);
    socket.destroy();
  }

  /** No longer counted (it is being closed). */
  forget(socket: Socket): void {
    this.remove(socket);
  }

  trust(socket: Socket): void {
    if (!this.anonymous.delete(socket)) return;
    this.leaveAddress(socket);
  }

  busy(socket: Socket): boolean {
    return this.inFlight.has(socket);
  }

  answering(socket: Socket, res: ServerResponse): void {
    if (!this.all.has(socket)) return; // refused: answered 503 already
    this.inFlight.set(socket, (this.inFlight.get(socket) ?? 0) + 1);
    res.once('close', () => {
      const left = (this.inFlight.get(socket) ?? 1) - 1;
      if (left > 0) this.inFlight.set(socket, left);
      else this.inFlight.delete(socket);
    });
  }

  anonymousFrom(address: string): number {
    return this.byAddress.get(address)?.size ?? 0;
  }

  /** The oldest anonymous connection (of `address`, when given), only among idle ones if `idle`. */
  oldestAnonymous(address: string | undefined, idle: boolean): Socket | undefined {
    const pool = address === undefined ? this.anonymous : (this.byAddress.get(address) ?? []);
    for (const socket of pool) if (!idle || !this.inFlight.has(socket)) return socket;
    return undefined;
  }

  private remove(socket: Socket): void {
    if (!this.all.delete(socket)) return;
    this.anonymous.delete(socket);
    this.inFlight.delete(socket);
    this.leaveAddress(socket);
    this.addressOf.delete(socket);
  }

  private leaveAddress(socket: Socket): void {
    const address = this.addressOf.get(socket);
    const mates = address === undefined ? undefined : this.byAddress.get(address);
    mates?.delete(socket);
    if (address !== undefined && mates?.size === 0) this.byAddress.delete(address);
  }
}

/**
 * The holder a client address stands for: an IPv4 address (IPv4-mapped IPv6 included) as is, an
 * IPv6 address as its /64, which one host is given whole and may pick any address from.
 */
export function addressKey(address: string | undefined): string {
  if (!address) return '';
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped?.[1]) return mapped[1];
  if (!address.includes(':')) return address;
  const bare = address.split('%')[0] ?? '';
  const [left = '', right] = bare.split('::');
  const head = left === '' ? [] : left.split(':');
  const tail = right === undefined || right === '' ? [] : right.split(':');
  const groups = [...head, ...Array<string>(Math.max(0, 8 - head.length - tail.length)).fill('0'), ...tail];
  return `${groups
    .slice(0, 4)
    .map((group) => Number.parseInt(group, 16).toString(16))
    .join(':')}::/64`;
}

function tooMany(full: Full): string {
  const what = full === 'server' ? 'too many connections' : 'too many connections from this address';
  const body = JSON.stringify({
    jsonrpc: '2.0',
    id: null,
    error: { code: -32000, message: `${what} (${SETTING[full]}); retry later` },
  });
  return (
    'HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nConnection: close\r\n' +
    `Retry-After: 1\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`
  );
}

function refusalLine(full: Full, address: string, limits: ConnectionLimits): string {
  if (full === 'server')
    return `http: ${limits.max} connections open, each authenticated: refusing new ones (${SETTING.server})`;
  return `http: ${address} holds ${limits.perAddress} unauthenticated connections, each answering: refusing its new ones (${SETTING.address})`;
}
