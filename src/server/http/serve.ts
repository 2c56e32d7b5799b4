// serve --http's lifecycle: the services, the listener and its bounds, the replicas, what is said
// on start, and the orderly stop on SIGTERM/SIGINT (route.ts answers each request).
import {
  createServer as createHttpServer,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from 'node:http';
import type { AddressInfo } from 'node:net';
import { createMcpHandler, type McpServer } from '@modelcontextprotocol/server';
import { ApprovalQueue, SharedApprovals } from '../../approvals/index.js';
import type { Config } from '../../config/index.js';
import { ConfigError } from '../../errors/index.js';
import { loadMetrics, type PrometheusMetrics, setQuotaSink } from '../../metrics/index.js';
import { startTracing } from '../../traces/index.js';
import { log, logAlways } from '../../util/index.js';
import type { Dashboard, DashboardDeps } from '../../web/index.js';
import { RunFeed } from '../feed.js';
import { HttpTaskListens } from '../listen/index.js';
import { createServer, VERSION } from '../server.js';
import { closeRecords, createServices, stopWork } from '../services.js';
import { loadPrincipals, type Principals } from './auth.js';
import { InflightBytes, InflightRequests } from './budget.js';
import { boundConnections, type ConnectionBounds } from './connections.js';
import { Forwarder } from './forward.js';
import { isLoopback } from './guards.js';
import { McpSessions } from './mcp-sessions.js';
import { metricSources } from './metrics.js';
import { Tenants } from './owned.js';
import { Replicas } from './replicas.js';
import { type RouteContext, refuse, route, upgradeRoute } from './route.js';
import { SharedTrust } from './trust.js';

const SHUTDOWN_DEADLINE_MS = 10_000;

export interface HttpOptions {
  readonly host: string;
  readonly port: number;
  /** Serve without tokens: only on a loopback host (refused otherwise). */
  readonly noAuth: boolean;
}

/**
 * More to register on each server instance, after codexec's own tools and resources, before it
 * serves. Only the conformance suite's fixture server (test/conformance) passes one, to serve the
 * suite's fixture tools over this very stack; the CLI never does, and no setting reaches it.
 */
export type ServerAddition = (server: McpServer) => void;

/**
 * Serve MCP over Streamable HTTP at /mcp (both eras: the SDK's createMcpHandler, and 2025-era MCP
 * sessions), /healthz and /metrics (Prometheus text), until SIGTERM/SIGINT. One set of services
 * (engine, pool, sessions, logs, metrics) for every client.
 */
export async function serveHttp(
  config: Config,
  options: HttpOptions,
  addition?: ServerAddition,
): Promise<void> {
  const loopback = isLoopback(options.host);
  if (options.noAuth && !loopback) {
    throw new ConfigError(`--no-auth is only allowed on a loopback host, not ${options.host}`);
  }
  const principals = options.noAuth ? undefined : loadPrincipals(config);
  const metrics = await loadMetrics();
  const services = await startServices(config, metrics);
  // A postgres store: one of several replicas, sessions found (and reached) through any of them.
  const replicas = services.store && new Replicas(services.store, services.approvalKey);
  const tenants = new Tenants(services.sessions, replicas, services.store && new SharedTrust(services.store));
  const forwarder = replicas && new Forwarder(replicas, tenants);
  // Every McpServer serves one principal, over the one set of services.
  const serverFor = (principal: string) => {
    const server = createServer(tenants.servicesFor(services, principal));
    addition?.(server);
    return server;
  };
  // A 2025-era `initialize` opens an MCP session: its server instance is kept for its requests.
  const sessions = new McpSessions(serverFor, {
    total: config.http.maxMcpSessions,
    perPrincipal: config.http.maxMcpSessionsPerPrincipal,
    idleMs: config.http.mcpSessionIdleMs,
    maxBodyBytes: config.http.maxBodyBytes,
  });
  // Everything else, one McpServer per request: 2026-era requests are self-contained, and a 2025-era
  // one without a session (a one-off request, one another replica forwards) is answered on its own.
  const handler = createMcpHandler((ctx) => serverFor(ctx.authInfo?.clientId ?? 'local'), {
    maxRequestBodySize: config.http.maxBodyBytes,
    onerror: (error) => log('debug', `http: ${error.message}`),
  });
  const inFlight = new Set<AbortController>();
  const dashboard = lazyDashboard({ services, admins: config.http.admins });
  const { http, bounds } = createListener(config, (req, res) => route(req, res, ctx));
  const ctx: RouteContext = {
    config,
    principals,
    loopback,
    handler,
    sessions,
    inFlight,
    inflightBytes: new InflightBytes(config.http.maxInflightBytes),
    inflightRequests: new InflightRequests(config.http.maxRequestsPerPrincipal),
    metrics,
    dashboard,
    forwarder,
    tenants,
    bounds,
    ports: (principal, sessionId, port) => services.sessions.exposedPort(principal, sessionId, port),
    listens: new HttpTaskListens(services.tasks),
  };
  http.on('upgrade', (req, socket, upgradeHead) => upgradeRoute(req, socket, upgradeHead, ctx));
  const address = await listen(http, options);
  // Registered before "listening" is said: a session started then is reachable from every replica.
  await replicas?.start(config.advertiseUrl ?? advertisedUrl(options.host, address.port));
  // Replicas on one database: a page on any of them answers approvals waiting on any.
  const sharedApprovals = services.store && new SharedApprovals(services.store, services.approvals);
  await sharedApprovals?.start();
  announce(config, options, address, principals);
  await untilStopped(async () => {
    http.close(); // stop accepting; in-flight exchanges still get their answers
    http.closeIdleConnections();
    await replicas?.stop(); // others answer SESSION_LOST for its sessions from now on
    // Cancelling runs makes their calls answer (timed out / cancelled) within the kill grace.
    await stopWork(services);
    await ctx.listens.close(); // after the tasks it stopped were told: their listens end with them
    // Let the stopped runs' answers reach their clients before connections are cut.
    await drained(inFlight, config.killGraceMs + 1000);
    await sessions.close(); // their GET streams end, their server instances close
    await handler.close().catch(() => {});
    await sharedApprovals?.stop();
    for (const controller of inFlight) controller.abort();
    http.closeAllConnections();
    await closeRecords(services);
  });
}

/** The one set of services, with what only serve --http has (the dashboard's feed and queue). */
async function startServices(config: Config, metrics: PrometheusMetrics) {
  // The feed is the dashboard's only part loaded before anyone opens it: a map and a set.
  const services = {
    ...(await createServices(config, { metrics, tracing: await startTracing(process.env, VERSION) })),
    feed: new RunFeed(),
    approvals: new ApprovalQueue(config.gate.approvalTimeoutMs, config.http.approvers),
  };
  metrics.watch(metricSources(services));
  setQuotaSink(metrics);
  services.history.startRetention();
  services.workspaces.start();
  return services;
}

/** The HTTP server, with its timeouts and connection bounds; `serve` answers each request. */
function createListener(
  config: Config,
  serve: (req: IncomingMessage, res: ServerResponse) => Promise<void>,
): { http: Server; bounds: ConnectionBounds } {
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
      void serve(req, res).catch((error: Error) => {
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
  return { http, bounds };
}

async function listen(http: Server, options: HttpOptions): Promise<AddressInfo> {
  await new Promise<void>((resolve, reject) => {
    http.once('error', (error: NodeJS.ErrnoException) => {
      // A port in use or a host not on this machine is a setting to fix: exit 2 saying which.
      reject(
        new ConfigError(`cannot listen on ${options.host}:${options.port} (${error.code ?? error.message})`),
      );
    });
    http.listen(options.port, options.host, () => resolve());
  });
  return http.address() as AddressInfo;
}

/** Say how the server is reached and who may decide approvals, "listening" last. */
function announce(
  config: Config,
  options: HttpOptions,
  address: AddressInfo,
  principals: Principals | undefined,
): void {
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
  logAlways(`codexec listening on http://${shown}:${address.port}/mcp`);
}

/** Wait for SIGTERM or SIGINT, then run `stop` once, giving up after SHUTDOWN_DEADLINE_MS. */
async function untilStopped(stop: () => Promise<void>): Promise<void> {
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
      await stop();
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

/**
 * The dashboard's server side and its files are read on the first request for them: a server
 * nobody opens the dashboard of keeps its memory (an idle server stays within 10 MB of a bare one).
 */
function lazyDashboard(deps: DashboardDeps): () => Promise<Dashboard> {
  let loaded: Promise<Dashboard> | undefined;
  return () => {
    loaded ??= import('../../web/index.js').then(({ createDashboard }) => createDashboard(deps));
    return loaded;
  };
}
