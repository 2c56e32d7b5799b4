// Where each HTTP request goes: /healthz, /metrics, the dashboard, a replica's request, or MCP at
// /mcp as the bearer token's principal; refusals in JSON-RPC error shape.
import { type IncomingMessage, type ServerResponse, STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import type { createMcpHandler } from '@modelcontextprotocol/server';
import type { Config } from '../../config/index.js';
import type { PrometheusMetrics } from '../../metrics/index.js';
import { asPrincipal } from '../../util/index.js';
import type { Dashboard } from '../../web/index.js';
import type { HttpTaskListens } from '../listen/index.js';
import type { Principals } from './auth.js';
import { refuseBatch } from './batch.js';
import type { InflightBytes, InflightRequests } from './budget.js';
import type { ConnectionBounds } from './connections.js';
import type { Forwarder } from './forward.js';
import { checkHost, checkOrigins, type Refusal, type RequestHead } from './guards.js';
import { type McpSessions, parseForSession } from './mcp-sessions.js';
import { answerMetrics } from './metrics.js';
import { BodyTooLarge, BudgetSpent, dropBody, readBody, sendWebResponse, toWebRequest } from './node.js';
import type { Tenants } from './owned.js';
import { isPortPath, type PortLookup, type PortTarget, portTarget, servePort, upgradePort } from './ports.js';

function isDashboardPath(path: string): 'asset' | 'api' | undefined {
  if (path === '/' || path.startsWith('/assets/')) return 'asset';
  if (path.startsWith('/api/')) return 'api';
  return undefined;
}

export interface RouteContext {
  readonly config: Config;
  readonly principals: Principals | undefined;
  readonly loopback: boolean;
  readonly handler: ReturnType<typeof createMcpHandler>;
  /** 2025-era MCP sessions: an `initialize` opens one, its Mcp-Session-Id reaches it. */
  readonly sessions: McpSessions;
  readonly inFlight: Set<AbortController>;
  /** CODEXEC_HTTP_MAX_INFLIGHT_BYTES: request bytes each principal holds in memory until answered. */
  readonly inflightBytes: InflightBytes;
  /** CODEXEC_HTTP_MAX_REQUESTS_PER_PRINCIPAL: requests each principal has in flight at once. */
  readonly inflightRequests: InflightRequests;
  readonly metrics: PrometheusMetrics;
  readonly dashboard: () => Promise<Dashboard>;
  /** A postgres store: requests to and from the other replicas. */
  readonly forwarder: Forwarder | undefined;
  readonly tenants: Tenants;
  /** Told which connections made an authenticated request: they are kept when the cap is full. */
  readonly bounds: ConnectionBounds;
  /** /p/<session>/<port>/: where a principal's session serves an exposed port. */
  readonly ports: PortLookup;
  /** subscriptions/listen naming tasks (the SDK's handler serves the rest of a listen). */
  readonly listens: HttpTaskListens;
}

const UNAUTHORIZED: Refusal = {
  status: 401,
  message: 'missing or wrong bearer token (Authorization: Bearer <token>)',
  headers: { 'www-authenticate': 'Bearer realm="codexec"' },
};

export async function route(req: IncomingMessage, res: ServerResponse, ctx: RouteContext): Promise<void> {
  const head: RequestHead = {
    host: req.headers.host,
    origin: req.headers.origin,
    localPort: req.socket.localPort,
  };
  const badHost = checkHost(head);
  if (badHost) return refuse(res, badHost);
  const path = (req.url ?? '/').split('?')[0] ?? '/';
  if (path === '/healthz') {
    if (req.method !== 'GET' && req.method !== 'HEAD')
      return refuse(res, { status: 405, message: 'use GET' });
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ status: 'ok' }));
    return;
  }
  if (path === '/metrics') return metricsRoute(req, res, head, ctx);
  if (isPortPath(path)) return portRoute(req, res, head, ctx);
  const page = isDashboardPath(path);
  const internal = ctx.forwarder?.isInternal(path) === true;
  if (path !== '/mcp' && !page && !internal)
    return refuse(res, { status: 404, message: 'not found: MCP is served at /mcp' });
  // Origin and Host first: a rebinding page must learn nothing, not even that a token is wanted.
  const refused = checkOrigins(head, ctx.loopback, ctx.config.http.allowedOrigins);
  if (refused) return refuse(res, refused);
  // The page and its files are public (they hold no data); every /api call needs a token.
  if (page === 'asset') return (await ctx.dashboard()).serveAsset(req, res, path);
  if (ctx.forwarder && (internal || ctx.forwarder.claimsReplica(req)) && !page)
    return replicaRoute(req, res, ctx, ctx.forwarder, internal);
  const principal = ctx.principals ? ctx.principals.identify(req.headers.authorization ?? null) : 'local';
  if (principal === undefined) return refuse(res, UNAUTHORIZED);
  ctx.bounds.trust(req.socket);
  if (!holdsPlace(res, ctx, principal)) return;
  // The principal is bound here, once: every service a request reaches reads it (util/principal).
  if (page === 'api') {
    const dashboard = await ctx.dashboard();
    return asPrincipal(principal, () => dashboard.serveApi(req, res, path, principal));
  }
  return asPrincipal(principal, () => serveMcp(req, res, ctx, principal, { from: 'client' }));
}

/**
 * /p/<session>/<port>/…: the principal's own session's exposed port, else 404 (another's, an
 * unknown one, a port not exposed, a process gone: the same answer).
 */
function portRoute(req: IncomingMessage, res: ServerResponse, head: RequestHead, ctx: RouteContext): void {
  const socket = portAdmission(req, head, ctx);
  if ('status' in socket) refuse(res, socket);
  else if (holdsPlace(res, ctx, socket.principal)) servePort(req, res, socket.path, socket.target);
}

/** The same for an upgrade (a WebSocket): refused on its raw socket. */
export function upgradeRoute(
  req: IncomingMessage,
  client: Duplex,
  upgradeHead: Buffer,
  ctx: RouteContext,
): void {
  client.on('error', () => client.destroy());
  const head: RequestHead = {
    host: req.headers.host,
    origin: req.headers.origin,
    localPort: req.socket.localPort,
  };
  const refusal =
    checkHost(head) ?? (isPortPath(req.url ?? '') ? undefined : { status: 404, message: 'not found' });
  const admitted = refusal ?? portAdmission(req, head, ctx);
  // An upgraded socket is a request in flight for as long as it is open.
  const socket =
    'status' in admitted || ctx.inflightRequests.hold(admitted.principal, client)
      ? admitted
      : tooManyRequests(ctx);
  if ('status' in socket) {
    const body = JSON.stringify({ error: socket.message });
    const extra = Object.entries(socket.headers ?? {})
      .filter(([name]) => name !== 'connection') // closed below in any case
      .map(([name, value]) => `${name}: ${value}\r\n`);
    client.end(
      `HTTP/1.1 ${socket.status} ${STATUS_CODES[socket.status] ?? ''}\r\ncontent-type: application/json\r\n${extra.join('')}content-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
    );
    return;
  }
  upgradePort(req, client, upgradeHead, socket.path, socket.target);
}

/** Origins, the token, the path and the lookup, in that order: the socket to use, or the refusal. */
function portAdmission(
  req: IncomingMessage,
  head: RequestHead,
  ctx: RouteContext,
): { path: string; target: PortTarget; principal: string } | Refusal {
  const refused = checkOrigins(head, ctx.loopback, ctx.config.http.allowedOrigins);
  if (refused) return refused;
  const principal = ctx.principals ? ctx.principals.identify(req.headers.authorization ?? null) : 'local';
  if (principal === undefined) return UNAUTHORIZED;
  ctx.bounds.trust(req.socket);
  const target = portTarget(req.url ?? '');
  const path = target && ctx.ports(principal, target.sessionId, target.port);
  if (!target || path === undefined)
    return { status: 404, message: 'no such exposed port of a session of yours (start_process expose_port)' };
  return { path, target, principal };
}

/**
 * A request from another replica: no token, but the principal it names, signed under the
 * replicas' shared key. Judged on its head before its body is read; served as that principal;
 * never forwarded again.
 */
async function replicaRoute(
  req: IncomingMessage,
  res: ServerResponse,
  ctx: RouteContext,
  forwarder: Forwarder,
  internal: boolean,
): Promise<void> {
  const admission = await forwarder.admit(req, ctx.config.http.maxBodyBytes);
  if (!admission.admitted) return refuse(res, admission.refusal);
  ctx.bounds.trust(req.socket);
  const { principal, body } = admission;
  if (internal) return asPrincipal(principal, () => forwarder.serveSessions(res, principal));
  // A forwarded request is its principal's here too, where it is served.
  if (!holdsPlace(res, ctx, principal)) return;
  return asPrincipal(principal, () => serveMcp(req, res, ctx, principal, { from: 'replica', body }));
}

/**
 * Hold one of `principal`'s places among requests in flight until `res` closes, or answer 429:
 * every request a principal keeps open (a call, a listen, a GET stream, a long poll) holds a
 * connection, and one token must not hold them all.
 */
function holdsPlace(res: ServerResponse, ctx: RouteContext, principal: string): boolean {
  if (res.closed) return false; // its client is gone already
  if (ctx.inflightRequests.hold(principal, res)) return true;
  refuse(res, tooManyRequests(ctx));
  return false;
}

function tooManyRequests(ctx: RouteContext): Refusal {
  return {
    status: 429,
    message: `requests in flight for this principal at ${ctx.inflightRequests.max} (CODEXEC_HTTP_MAX_REQUESTS_PER_PRINCIPAL); wait for answers or end a stream, then try again`,
    headers: { connection: 'close', 'retry-after': '1' },
  };
}

/** An MCP exchange as `principal`; a client's call for a session on another replica goes there. */
async function serveMcp(
  req: IncomingMessage,
  res: ServerResponse,
  ctx: RouteContext,
  principal: string,
  received: { from: 'client' } | { from: 'replica'; body: Buffer | undefined },
): Promise<void> {
  const controller = new AbortController();
  res.once('close', () => {
    if (!res.writableFinished) controller.abort(); // the client went away: cancel its exchange only
  });
  const body = received.from === 'replica' ? received.body : await readPost(req, res, ctx, principal);
  if (body === null) return;
  // A session's GET stream is no exchange awaiting its answer: stopping does not wait for it.
  if (req.method !== 'GET') ctx.inFlight.add(controller);
  try {
    const batch = refuseBatch(body);
    if (batch) return await sendWebResponse(res, batch);
    const elsewhere = received.from === 'client' && body !== undefined && ctx.forwarder;
    if (elsewhere && (await elsewhere.forward(req, res, body, principal, controller.signal))) return;
    const prepared = ctx.tenants.prepare(principal); // a shared store: what it trusted elsewhere
    if (prepared) await prepared;
    const request = toWebRequest(req, body, controller.signal);
    const parsed = parseForSession(request.headers, body);
    if (await ctx.sessions.claims(request, parsed))
      return await ctx.sessions.serve(request, parsed, principal, (response) =>
        sendWebResponse(res, response),
      );
    const authInfo = { token: '', clientId: principal, scopes: [] };
    const answer = () => ctx.handler.fetch(request, { authInfo });
    const response = ctx.listens.claims(body)
      ? await ctx.listens.serve(body, principal, controller.signal, answer)
      : await answer();
    await sendWebResponse(res, response);
  } finally {
    ctx.inFlight.delete(controller);
    if (received.from === 'client' && body) ctx.inflightBytes.release(principal, body.length);
  }
}

/**
 * A POST's body (undefined for other methods), counted in its principal's bytes in flight until
 * its answer (serveMcp gives them back); null once answered 413 for its size, or 429 for what the
 * principal has in flight already.
 */
async function readPost(req: IncomingMessage, res: ServerResponse, ctx: RouteContext, principal: string) {
  if (req.method !== 'POST') return undefined;
  const budget = {
    take: (bytes: number) => ctx.inflightBytes.take(principal, bytes),
    release: (bytes: number) => ctx.inflightBytes.release(principal, bytes),
  };
  try {
    return await readBody(req, ctx.config.http.maxBodyBytes, budget);
  } catch (error) {
    if (error instanceof BudgetSpent) {
      refuse(res, {
        status: 429,
        message: `request bytes in flight for this principal over ${ctx.inflightBytes.max} (CODEXEC_HTTP_MAX_INFLIGHT_BYTES); wait for answers, then try again`,
        headers: { connection: 'close' },
      });
      return null;
    }
    if (!(error instanceof BodyTooLarge)) throw error;
    refuse(res, {
      status: 413,
      message: `request body over ${ctx.config.http.maxBodyBytes} bytes (CODEXEC_HTTP_MAX_BODY_BYTES)`,
      headers: { connection: 'close' },
    });
    return null;
  }
}

/** GET /metrics: the Origin rules and tokens of /mcp, unless CODEXEC_METRICS_PUBLIC=true. */
function metricsRoute(req: IncomingMessage, res: ServerResponse, head: RequestHead, ctx: RouteContext) {
  if (req.method !== 'GET' && req.method !== 'HEAD') return refuse(res, { status: 405, message: 'use GET' });
  const refused = checkOrigins(head, ctx.loopback, ctx.config.http.allowedOrigins);
  if (refused) return refuse(res, refused);
  const open = ctx.config.http.metricsPublic || !ctx.principals;
  if (!open && ctx.principals?.identify(req.headers.authorization ?? null) === undefined)
    return refuse(res, UNAUTHORIZED);
  if (!open) ctx.bounds.trust(req.socket);
  return answerMetrics(req, res, ctx.metrics);
}

/**
 * A refusal in JSON-RPC error shape, so MCP clients can show the sentence. The body of a refused
 * request is never read into memory: what is left of it is dropped, and the connection is cut if
 * it does not end soon (anyone can send one without a token).
 */
export function refuse(res: ServerResponse, refusal: Refusal): void {
  if (!res.req.complete) dropBody(res.req); // before the answer: once it ends, the socket is detached
  res.writeHead(refusal.status, { 'content-type': 'application/json', ...refusal.headers });
  res.end(JSON.stringify({ jsonrpc: '2.0', id: null, error: { code: -32000, message: refusal.message } }));
}
