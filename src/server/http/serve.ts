import { createServer as createHttpServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createMcpHandler } from '@modelcontextprotocol/server';
import { ApprovalQueue, SharedApprovals } from '../../approvals/index.js';
import type { Config } from '../../config/index.js';
import { ConfigError } from '../../errors/index.js';
import { loadMetrics, type PrometheusMetrics, setQuotaSink } from '../../metrics/index.js';
import { startTracing } from '../../traces/index.js';
import { asPrincipal, log } from '../../util/index.js';
import { RunFeed } from '../feed.js';
import { createServer, VERSION } from '../server.js';
import { closeRecords, createServices, type Services, stopWork } from '../services.js';
import { loadPrincipals, type Principals } from './auth.js';
import { InflightBytes } from './budget.js';
import { boundConnections, type ConnectionBounds } from './connections.js';
import { Forwarder } from './forward.js';
import { checkHost, checkOrigins, isLoopback, type Refusal, type RequestHead } from './guards.js';
import { answerMetrics, metricSources } from './metrics.js';
import { BodyTooLarge, BudgetSpent, dropBody, readBody, sendWebResponse, toWebRequest } from './node.js';
import { Tenants } from './owned.js';
import { Replicas } from './replicas.js';
import { SharedTrust } from './trust.js';

/** What the dashboard's server side is handed when first loaded (src/web imports only types here). */
export interface DashboardDeps {
  readonly services: Services & { readonly feed: RunFeed; readonly approvals: ApprovalQueue };
  readonly tenants: Tenants;
  /** CODEXEC_HTTP_ADMINS: principals that see everyone's runs and sessions. */
  readonly admins: readonly string[];
}

export interface Dashboard {
  serveAsset(req: IncomingMessage, res: ServerResponse, path: string): Promise<void>;
  serveApi(req: IncomingMessage, res: ServerResponse, path: string, principal: string): Promise<void>;
}

function isDashboardPath(path: string): 'asset' | 'api' | undefined {
  if (path === '/' || path.startsWith('/assets/')) return 'asset';
  if (path.startsWith('/api/')) return 'api';
  return undefined;
}

const SHUTDOWN_DEADLINE_MS = 10_000;

export interface HttpOptions {
  readonly host: string;
  readonly port: number;
  /** Serve without tokens: only on a loopback host (refused otherwise). */
  readonly noAuth: boolean;
}

/**
 * Serve MCP over Streamable HTTP at /mcp (both eras, the SDK's createMcpHandler), /healthz and
 * /metrics (Prometheus text), until SIGTERM/SIGINT. One set of services (engine, pool, sessions,
 * logs, metrics) for every client.
 */
export async function serveHttp(config: Config, options: HttpOptions): Promise<void> {
  const loopback = isLoopback(options.host);
  if (options.noAuth && !loopback) {
    throw new ConfigError(`--no-auth is only allowed on a loopback host, not ${options.host}`);
  }
  const principals = options.noAuth ? undefined : loadPrincipals(config);
  const metrics = await loadMetrics();
  // The feed is the dashboard's only part loaded before anyone opens it: a map and a set.
  const services = {
    ...createServices(config, { metrics, tracing: await startTracing(process.env, VERSION) }),
    feed: new RunFeed(),
    approvals: new ApprovalQueue(config.gate.approvalTimeoutMs, config.http.approvers),
  };
  metrics.watch(metricSources(services));
  setQuotaSink(metrics);
  services.history.startRetention();
  services.workspaces.start();
  // One McpServer per HTTP request (the SDK's model: 2026 requests are self-contained, 2025 traffic
  // is served statelessly), all over the one set of services.
  // A postgres store: one of several replicas, sessions found (and reached) through any of them.
  const replicas = services.store && new Replicas(services.store, services.approvalKey);
  const tenants = new Tenants(services.sessions, replicas, services.store && new SharedTrust(services.store));
  const forwarder = replicas && new Forwarder(replicas, tenants);
  const handler = createMcpHandler(
    (ctx) => createServer(tenants.servicesFor(services, ctx.authInfo?.clientId ?? 'local')),
    {
      maxRequestBodySize: config.http.maxBodyBytes,
      onerror: (error) => log('debug', `http: ${error.message}`),
    },
  );
  const inFlight = new Set<AbortController>();
  const dashboard = lazyDashboard({ services, tenants, admins: config.http.admins });
  const limits = config.http;
  const http = createHttpServer(
    {
      // Slow or silent clients (slowloris) get 408 and lose their connection in bounded time.
      headersTimeout: limits.headersTimeoutMs,
      requestTimeout: limits.requestTimeoutMs,
      connectionsCheckingInterval: Math.min(1000, limits.headersTimeoutMs),
      // The guards answer a missing Host with a sentence, not Node's empty 400.
      requireHostHeader: false,
    },
    (req, res) => {
      if (bounds.refused(req.socket)) return; // answered 503 already, and closing
      void route(req, res, ctx).catch((error: Error) => {
        log('warn', `http: ${error.message}`);
        if (!res.headersSent) refuse(res, { status: 500, message: 'internal error' });
        else res.end();
      });
    },
  );
  http.keepAliveTimeout = limits.keepAliveTimeoutMs;
  const bounds = boundConnections(http, {
    max: limits.maxConnections,
    perAddress: limits.maxConnectionsPerAddress,
  });
  const ctx: RouteContext = {
    config,
    principals,
    loopback,
    handler,
    inFlight,
    inflightBytes: new InflightBytes(config.http.maxInflightBytes),
    metrics,
    dashboard,
    forwarder,
    tenants,
    bounds,
  };
  await new Promise<void>((resolve, reject) => {
    http.once('error', (error: NodeJS.ErrnoException) => {
      // A port in use or a host not on this machine is a setting to fix: exit 2 saying which.
      reject(
        new ConfigError(`cannot listen on ${options.host}:${options.port} (${error.code ?? error.message})`),
      );
    });
    http.listen(options.port, options.host, () => resolve());
  });
  const address = http.address() as AddressInfo;
  // Registered before "listening" is said: a session started then is reachable from every replica.
  await replicas?.start(config.advertiseUrl ?? advertisedUrl(options.host, address.port));
  // Replicas on one database: a page on any of them answers approvals waiting on any.
  const sharedApprovals = services.store && new SharedApprovals(services.store, services.approvals);
  await sharedApprovals?.start();
  const shown = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  // The token line first: whoever waits for "listening" has read it by then.
  if (principals) log('info', `bearer tokens: ${principals.source}`);
  else log('warn', 'serving WITHOUT authentication (--no-auth, loopback only)');
  const nobodyDecides = options.noAuth
    ? '--no-auth: everyone is local, the caller whose call waits too'
    : config.http.approvers.length === 0 && 'CODEXEC_HTTP_APPROVERS (default CODEXEC_HTTP_ADMINS) is empty';
  if (config.gate.approver !== 'client' && nobodyDecides)
    log(
      'warn',
      `CODEXEC_APPROVER=${config.gate.approver}, but nobody may decide in the dashboard (${nobodyDecides})`,
    );
  log('info', `codexec listening on http://${shown}:${address.port}/mcp`);

  await new Promise<void>((resolve) => {
    let closing = false;
    const shutdown = async (why: string) => {
      if (closing) return;
      closing = true;
      log('info', `shutting down (${why})`);
      setTimeout(() => {
        log('warn', `shutdown still unfinished after ${SHUTDOWN_DEADLINE_MS} ms; exiting anyway`);
        resolve();
      }, SHUTDOWN_DEADLINE_MS).unref();
      http.close(); // stop accepting; in-flight exchanges still get their answers
      http.closeIdleConnections();
      await replicas?.stop(); // others answer SESSION_LOST for its sessions from now on
      // Cancelling runs makes their calls answer (timed out / cancelled) within the kill grace.
      await stopWork(services);
      // Let the stopped runs' answers reach their clients before connections are cut.
      await drained(inFlight, config.killGraceMs + 1000);
      await handler.close().catch(() => {});
      await sharedApprovals?.stop();
      for (const controller of inFlight) controller.abort();
      http.closeAllConnections();
      await closeRecords(services);
      resolve();
    };
    // `on`, not `once`: a second signal during shutdown must not fall through to the default
    // action (death by signal, logs unflushed); the deadline above bounds the wait instead.
    process.on('SIGTERM', () => void shutdown('SIGTERM'));
    process.on('SIGINT', () => void shutdown('SIGINT'));
  });
}

/** How other replicas reach this one when CODEXEC_ADVERTISE_URL does not say: the bind host. */
function advertisedUrl(host: string, port: number): string {
  if (host === '0.0.0.0' || host === '::')
    log('warn', `replicas will be told to reach this one at ${host}; set CODEXEC_ADVERTISE_URL`);
  return `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
}

/** Resolve when no request is in flight any more, or after `ms`. */
async function drained(inFlight: Set<AbortController>, ms: number): Promise<void> {
  const until = Date.now() + ms;
  while (inFlight.size > 0 && Date.now() < until) await new Promise((resolve) => setTimeout(resolve, 20));
}

interface RouteContext {
  readonly config: Config;
  readonly principals: Principals | undefined;
  readonly loopback: boolean;
  readonly handler: ReturnType<typeof createMcpHandler>;
  readonly inFlight: Set<AbortController>;
  /** CODEXEC_HTTP_MAX_INFLIGHT_BYTES: request bytes each principal holds in memory until answered. */
  readonly inflightBytes: InflightBytes;
  readonly metrics: PrometheusMetrics;
  readonly dashboard: () => Promise<Dashboard>;
  /** A postgres store: requests to and from the other replicas. */
  readonly forwarder: Forwarder | undefined;
  readonly tenants: Tenants;
  /** Told which connections made an authenticated request: they are kept when the cap is full. */
  readonly bounds: ConnectionBounds;
}

/**
 * The dashboard's server side and its files are read on the first request for them: a server
 * nobody opens the dashboard of keeps its memory (DESIGN §9: idle RSS within 10 MB).
 */
function lazyDashboard(deps: DashboardDeps): () => Promise<Dashboard> {
  let loaded: Promise<Dashboard> | undefined;
  return () => {
    loaded ??= import('../../web/index.js').then(({ createDashboard }) => createDashboard(deps));
    return loaded;
  };
}

const UNAUTHORIZED: Refusal = {
  status: 401,
  message: 'missing or wrong bearer token (Authorization: Bearer <token>)',
  headers: { 'www-authenticate': 'Bearer realm="codexec"' },
};

async function route(req: IncomingMessage, res: ServerResponse, ctx: RouteContext): Promise<void> {
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
  // The principal is bound here, once: every service a request reaches reads it (util/principal).
  if (page === 'api') {
    const dashboard = await ctx.dashboard();
    return asPrincipal(principal, () => dashboard.serveApi(req, res, path, principal));
  }
  return asPrincipal(principal, () => serveMcp(req, res, ctx, principal, { from: 'client' }));
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
  return asPrincipal(principal, () => serveMcp(req, res, ctx, principal, { from: 'replica', body }));
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
  ctx.inFlight.add(controller);
  try {
    const elsewhere = received.from === 'client' && body !== undefined && ctx.forwarder;
    if (elsewhere && (await elsewhere.forward(req, res, body, principal, controller.signal))) return;
    const prepared = ctx.tenants.prepare(principal); // a shared store: what it trusted elsewhere
    if (prepared) await prepared;
    const request = toWebRequest(req, body, controller.signal);
    const authInfo = { token: '', clientId: principal, scopes: [] };
    await sendWebResponse(res, await ctx.handler.fetch(request, { authInfo }));
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
function refuse(res: ServerResponse, refusal: Refusal): void {
  if (!res.req.complete) dropBody(res.req); // before the answer: once it ends, the socket is detached
  res.writeHead(refusal.status, { 'content-type': 'application/json', ...refusal.headers });
  res.end(JSON.stringify({ jsonrpc: '2.0', id: null, error: { code: -32000, message: refusal.message } }));
}
