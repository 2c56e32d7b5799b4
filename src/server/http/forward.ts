import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import type { ReplicaRow } from '../../store/index.js';
import { log } from '../../util/index.js';
import type { Refusal } from './guards.js';
import { BodyTooLarge, readBody } from './node.js';
import type { Tenants } from './owned.js';
import { type Outgoing, proxy } from './proxy.js';
import { ReplicaAuth } from './replica-auth.js';
import { type Replicas, SESSIONS_PATH } from './replicas.js';

/** The caller's headers that carry MCP meaning (others, its token first, stay on this replica). */
const PASSED = new Set(['accept', 'content-type']);

const NOT_SIGNED: Refusal = {
  status: 401,
  message: 'not a valid request from another replica (signature, target, time or body)',
};

/** A request from another replica: served as `principal` with `body` (POST), or refused. */
export type Admission =
  | { readonly admitted: true; readonly principal: string; readonly body: Buffer | undefined }
  | { readonly admitted: false; readonly refusal: Refusal };

/**
 * The HTTP side of replicas: a request naming a session another live replica runs is proxied to
 * it, signed as the caller's principal; one whose replica is gone is left to the local handler,
 * which answers SESSION_LOST; a request from another replica is verified, served as the
 * principal it names, and never forwarded again.
 */
export class Forwarder {
  constructor(
    private readonly replicas: Replicas,
    private readonly tenants: Tenants,
  ) {}

  /** A path only replicas call. */
  isInternal(path: string): boolean {
    return path === SESSIONS_PATH;
  }

  /** Whether a request says it comes from another replica (then only its signature can admit it). */
  claimsReplica(req: IncomingMessage): boolean {
    return ReplicaAuth.claims(req.headers);
  }

  /**
   * Another replica's request, judged on its head before a byte of its body is read (a forged,
   * misdirected, old or replayed one is refused with its body unread), then its body read no
   * further than the signed length and checked against the signed digest.
   */
  async admit(req: IncomingMessage, maxBodyBytes: number): Promise<Admission> {
    const signed = await this.replicas.auth.admit(req.method ?? 'GET', req.url ?? '/', req.headers);
    if (!signed) return { admitted: false, refusal: NOT_SIGNED };
    if (signed.length > maxBodyBytes) {
      const message = `request body over ${maxBodyBytes} bytes (CODEXEC_HTTP_MAX_BODY_BYTES)`;
      return { admitted: false, refusal: { status: 413, message } };
    }
    const declared = req.headers['content-length'];
    if (declared !== undefined && Number(declared) !== signed.length)
      return { admitted: false, refusal: NOT_SIGNED };
    let body: Buffer;
    try {
      body = await readBody(req, signed.length);
    } catch (error) {
      if (error instanceof BodyTooLarge) return { admitted: false, refusal: NOT_SIGNED };
      throw error;
    }
    if (!ReplicaAuth.matches(signed, body)) return { admitted: false, refusal: NOT_SIGNED };
    return { admitted: true, principal: signed.principal, body: req.method === 'POST' ? body : undefined };
  }

  /** SESSIONS_PATH: `principal`'s sessions on this replica, for another's list_sessions. */
  async serveSessions(res: ServerResponse, principal: string): Promise<void> {
    const sessions = await this.tenants.listOwn(principal);
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ sessions }));
  }

  /**
   * A tools/call whose session_id names no session here but one of `principal`'s in the
   * directory: proxied to its replica while that one lives (true: answered). Its replica gone
   * (dead in the registry, or refusing the connection) the session is lost, here and in the
   * directory, and false leaves the answer (SESSION_LOST) to the local handler, as it does for
   * anything else: another principal's session is SESSION_NOT_FOUND, as if it did not exist.
   */
  async forward(
    req: IncomingMessage,
    res: ServerResponse,
    body: Buffer,
    principal: string,
    signal: AbortSignal,
  ): Promise<boolean> {
    const sessionId = namedSession(body);
    if (sessionId === undefined || this.tenants.isLocal(sessionId)) return false;
    if (this.tenants.isLost(sessionId, principal)) return false;
    const record = await this.replicas.elsewhereRecord(sessionId);
    if (!record || record.principal !== principal) return false;
    const owner = await this.replicas.ownerOf(record);
    if (owner) {
      const outcome = await proxy(this.outgoing(req, body, principal, owner), res, signal);
      if (outcome === 'answered') return true;
      log('warn', `replica ${owner.replicaId} (${owner.url}) unreachable: session ${sessionId} is lost`);
    }
    this.tenants.markLost(sessionId, principal);
    if (!record.lost) await this.replicas.markLost(sessionId);
    return false;
  }

  private outgoing(req: IncomingMessage, body: Buffer, principal: string, owner: ReplicaRow): Outgoing {
    const url = new URL(`${owner.url}/mcp`);
    const method = req.method ?? 'POST';
    const passed = passedHeaders(req.headers);
    const parts = { method, path: `${url.pathname}${url.search}`, body };
    return {
      url,
      method,
      body,
      headers: () => ({ ...passed, ...this.replicas.auth.sign(parts, principal, owner.replicaId) }),
    };
  }
}

/**
 * The caller's headers that go to the other replica: MCP's own, never its token, cookies or
 * Origin, nor its MCP session's id (a session lives on the replica that opened it: the owner
 * answers the one forwarded call without a session).
 */
export function passedHeaders(headers: IncomingHttpHeaders): Record<string, string> {
  const passed: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (name === 'mcp-session-id' || typeof value !== 'string') continue;
    if (PASSED.has(name) || name.startsWith('mcp-')) passed[name] = value;
  }
  return passed;
}

/** The session a JSON-RPC tools/call names in `arguments.session_id`, if any. */
function namedSession(body: Buffer): string | undefined {
  if (!body.includes('session_id')) return undefined; // most calls: no second parse
  let message: unknown;
  try {
    message = JSON.parse(body.toString('utf8'));
  } catch {
    return undefined; // the local handler answers the parse error
  }
  if (typeof message !== 'object' || message === null || Array.isArray(message)) return undefined;
  const { method, params } = message as { method?: unknown; params?: { arguments?: unknown } };
  if (method !== 'tools/call' || typeof params?.arguments !== 'object' || params.arguments === null)
    return undefined;
  const sessionId = (params.arguments as { session_id?: unknown }).session_id;
  return typeof sessionId === 'string' && sessionId.length > 0 ? sessionId : undefined;
}
