// How runs use the egress proxy of CODEXEC_NETWORK=allowlist: one lane per sandbox (the proxy on a
// Unix socket in its workspace, which the sandbox's forwarder relays to; in landlock mode a port
// on the host's loopback, the only one its code may connect to), the variables that point
// programs at it, the rules of a call, and the record of the connections a run made.
import { join } from 'node:path';
import type { Config } from '../config/index.js';
import { InvalidInputError, SandboxUnavailableError } from '../errors/index.js';
import type { Capabilities, EgressEndpoint } from '../sandbox/index.js';
import { log } from '../util/index.js';
import type { Credentials } from './credentials.js';
import { EgressRules, type HostRule, parseRules } from './rules.js';
import type { EgressConnection, Lane, LaneUser } from './types.js';

/** The proxy's socket in a workspace: left out of artifacts by name, removed with the lane. */
export const PROXY_SOCKET = '.codexec-proxy.sock';
/** The forwarder's port on a sandbox's own loopback (namespace and docker modes). */
export const FORWARDER_PORT = 3128;
/** Connections a run records; past them only counted (a loop of requests must not grow memory). */
const MAX_RECORDED = 200;
/** Names of a sandbox's own loopback, left out of the proxy unless the allowlist names them. */
const LOOPBACK_NAMES = ['localhost', '127.0.0.1', '::1'];

/** Said once per server: landlock mode's allowlist is port-scoped (docs/security.md). */
let warnedPortScoped = false;
/** Where a result's list of every connection travels: a symbol, so never onto the wire. */
export const CONNECTIONS = Symbol('egress connections');

/**
 * The proxy, loaded with the first lane: it brings node:http and node:dns, ~3 MB of an idle
 * server's memory that a server without CODEXEC_NETWORK=allowlist never needs.
 */
const proxy = () => import('./proxy.js');

export interface OpenedLane {
  readonly lane: Lane;
  readonly endpoint: EgressEndpoint;
  /** The proxy variables for the program's environment. */
  readonly env: Record<string, string>;
}

/**
 * A lane for the sandbox whose workspace is `workspace`, in the form its backend reaches the proxy
 * (`egress`, the backend's capability); `python` runs the forwarder (a socket relayed to the
 * sandbox's own loopback).
 */
export async function openRunLane(
  workspace: string,
  egress: Capabilities['egress'],
  python: string,
  allowed: readonly HostRule[] = [],
  credentials?: Credentials,
): Promise<OpenedLane> {
  if (egress === 'none')
    throw new SandboxUnavailableError(
      'CODEXEC_NETWORK=allowlist needs a sandbox (namespace, landlock or docker mode): in subprocess mode code has the host network, which no proxy can confine',
    );
  if (egress === 'port') {
    if (!warnedPortScoped) {
      warnedPortScoped = true;
      log(
        'warn',
        "CODEXEC_NETWORK=allowlist in landlock mode: Landlock confines code's TCP to the proxy's port, on any address " +
          '(a host outside that answers on the same port is reachable); namespace and docker modes confine it to the proxy itself',
      );
    }
    const lane = await (await proxy()).openLane({ tcp: true }, undefined, { credentials });
    const port = lane.port as number;
    return withCredentials({ lane, endpoint: { port }, env: proxyEnv(port, allowed) }, credentials);
  }
  const socket = join(workspace, PROXY_SOCKET);
  const lane = await (await proxy()).openLane({ socket }, undefined, { credentials });
  return withCredentials(
    { lane, endpoint: { socket, port: FORWARDER_PORT, python }, env: proxyEnv(FORWARDER_PORT, allowed) },
    credentials,
  );
}

/**
 * CODEXEC_CREDENTIALS: the placeholders and trust stores in the environment, the CA's files for
 * the sandbox to read (made by then: a CA that could not be made fails the lane, and its run).
 */
async function withCredentials(
  opened: OpenedLane,
  credentials: Credentials | undefined,
): Promise<OpenedLane> {
  if (!credentials) return opened;
  try {
    await credentials.ca;
  } catch (error) {
    await opened.lane.close();
    throw new SandboxUnavailableError(
      `CODEXEC_CREDENTIALS: the egress proxy's CA could not be made (${(error as Error).message})`,
    );
  }
  return {
    lane: opened.lane,
    endpoint: { ...opened.endpoint, trust: credentials.files() },
    env: { ...opened.env, ...credentials.env() },
  };
}

/**
 * The variables programs read their proxy from: curl, Python (urllib, requests, pip), npm, Node ≥ 24.
 * A program's own loopback (a server it started) is reached directly, but for a loopback name the
 * server's allowlist names (`localhost:4318`: a service on the host's loopback), which goes to the
 * proxy as every allowed host does (NO_PROXY has no ports: the whole name goes).
 */
export function proxyEnv(port: number, allowed: readonly HostRule[] = []): Record<string, string> {
  const url = `http://127.0.0.1:${port}`;
  const named = new Set(allowed.filter((rule) => !rule.wildcard).map((rule) => rule.host));
  const direct = LOOPBACK_NAMES.filter((name) => !named.has(name)).join(',');
  return {
    HTTP_PROXY: url,
    HTTPS_PROXY: url,
    http_proxy: url,
    https_proxy: url,
    npm_config_proxy: url,
    npm_config_https_proxy: url,
    PIP_PROXY: url,
    NO_PROXY: direct,
    no_proxy: direct,
    NODE_USE_ENV_PROXY: '1',
  };
}

/**
 * The rules of a call: the server's lists, narrowed by the call's `allowed_domains` (never wider).
 * A list given while the network is not the allowlist is refused: it would allow nothing.
 */
export function callRules(config: Pick<Config, 'network' | 'egress'>, allowedDomains?: readonly string[]) {
  if (allowedDomains !== undefined && config.network !== 'allowlist')
    throw new InvalidInputError(
      `allowed_domains needs CODEXEC_NETWORK=allowlist; this server's network is ${config.network}`,
    );
  const rules = new EgressRules(config.egress.allowed, config.egress.denied);
  if (allowedDomains === undefined) return rules;
  const refusal = (message: string) => new InvalidInputError(message);
  return rules.narrow(parseRules(allowedDomains.join(','), 'allowed_domains', refusal));
}

/** What one run (or session) did through its lane: the connections, in order. */
export class EgressRecord implements LaneUser {
  private readonly connections: EgressConnection[] = [];

  constructor(
    readonly rules: EgressRules,
    /** Set per send in a session: the client that can be asked is the current request's. */
    public ask?: LaneUser['ask'],
  ) {}

  record(connection: EgressConnection): void {
    if (this.connections.length < MAX_RECORDED) this.connections.push(connection);
  }

  /** How many are recorded: a mark for since(). */
  get size(): number {
    return this.connections.length;
  }

  /** The connections from `mark` on (a session's send: those made while it ran). */
  since(mark = 0): EgressConnection[] {
    return this.connections.slice(mark);
  }
}

/**
 * A result's `network_denied`: each host and port the rules (or the person asked) refused, once,
 * in order; absent when none. A target allowed but not answering (502) or a full lane (503) is in
 * the log, not here: nothing denied it.
 */
export function deniedOf(
  connections: readonly EgressConnection[],
): Array<{ host: string; port: number }> | undefined {
  const seen = new Set<string>();
  const denied: Array<{ host: string; port: number }> = [];
  for (const { host, port, allowed, status } of connections) {
    const key = `${host}:${port}`;
    if (allowed || status === 502 || status === 503 || seen.has(key)) continue;
    seen.add(key);
    denied.push({ host, port });
  }
  return denied.length > 0 ? denied : undefined;
}

/** The log's and audit's form of a connection: what was asked, what was decided, why. */
export type LoggedConnection = ReturnType<typeof loggedConnection>;

export function loggedConnection({ host, port, allowed, reason, method, at, asked }: EgressConnection) {
  return { host, port, allowed, method, at, ...(reason && { reason }), ...(asked && { asked }) };
}
