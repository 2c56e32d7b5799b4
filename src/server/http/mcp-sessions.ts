// 2025-era MCP sessions over HTTP: `initialize` opens one (a server instance and its transport,
// kept for the session), its Mcp-Session-Id carries every later request, GET opens its stream.
import { randomBytes } from 'node:crypto';
import {
  type AuthInfo,
  isInitializeRequest,
  isJSONRPCRequest,
  isLegacyRequest,
  type McpServer,
  WebStandardStreamableHTTPServerTransport,
} from '@modelcontextprotocol/server';
import { log } from '../../util/index.js';

export interface SessionLimits {
  /** CODEXEC_HTTP_MAX_MCP_SESSIONS: open sessions on this server, all principals together. */
  readonly total: number;
  /** CODEXEC_HTTP_MAX_MCP_SESSIONS_PER_PRINCIPAL. */
  readonly perPrincipal: number;
  /** CODEXEC_HTTP_MCP_SESSION_IDLE_MS: a session nobody has sent a request for this long ends. */
  readonly idleMs: number;
  readonly maxBodyBytes: number;
}

interface Session {
  readonly id: string;
  readonly principal: string;
  readonly server: McpServer;
  readonly transport: WebStandardStreamableHTTPServerTransport;
  /** The server connected to the transport (once, when the session opens). */
  readonly connected: Promise<void>;
  lastSeen: number;
  /** Exchanges (POST, DELETE) being answered: a session with one is never idle. */
  busy: number;
}

/** The answer to an unknown id, an ended one, and another principal's alike (the SDK's words). */
const NOT_FOUND = { status: 404, code: -32001, message: 'Session not found' };

/**
 * The live 2025-era sessions of this server, each bound to the principal whose `initialize`
 * opened it: a request is served by a session only when both its id and its principal match, so
 * another principal's id is answered exactly as an unknown one. Requests without an id (other than
 * `initialize`) never come here: they are answered one by one, without a session, as 2026-era
 * requests are.
 */
export class McpSessions {
  private readonly live = new Map<string, Session>();
  private readonly counts = new Map<string, number>();
  private readonly sweeper: NodeJS.Timeout;
  private stopping = false;

  constructor(
    private readonly factory: (principal: string) => McpServer,
    private readonly limits: SessionLimits,
  ) {
    const every = Math.min(60_000, Math.max(50, Math.floor(limits.idleMs / 4)));
    this.sweeper = setInterval(() => this.sweep(), every).unref();
  }

  get size(): number {
    return this.live.size;
  }

  /**
   * Whether a request is a session's: it names an Mcp-Session-Id or is an `initialize`, and is of
   * the 2025 era (the SDK's own classification; a 2026-era request is self-contained whatever it
   * carries). `parsed`: its body, parsed, when it is JSON.
   */
  async claims(request: Request, parsed: unknown): Promise<boolean> {
    if (!request.headers.has('mcp-session-id') && !isInitialize(parsed)) return false;
    const options = { maxRequestBodySize: this.limits.maxBodyBytes };
    return parsed === undefined
      ? isLegacyRequest(request, undefined, options)
      : isLegacyRequest(request, parsed, options);
  }

  /** Serve a claimed request as `principal`, handing its answer to `send` (which streams it). */
  async serve(
    request: Request,
    parsed: unknown,
    principal: string,
    send: (response: Response) => Promise<void>,
  ): Promise<void> {
    const id = request.headers.get('mcp-session-id');
    const session = id === null ? this.open(principal) : this.find(id, principal);
    if ('status' in session) return send(refusal(session));
    const authInfo: AuthInfo = { token: '', clientId: principal, scopes: [] };
    session.lastSeen = Date.now();
    await session.connected;
    // An open GET stream is not activity: a session kept only by its stream still expires.
    if (request.method === 'GET') return send(await session.transport.handleRequest(request, { authInfo }));
    session.busy += 1;
    const gone = () => this.cancelled(session, parsed, authInfo);
    request.signal.addEventListener('abort', gone, { once: true });
    try {
      const response = await session.transport.handleRequest(request, {
        authInfo,
        ...(parsed !== undefined && { parsedBody: parsed }),
      });
      // An initialize the transport refused (bad params, say) opened no session: nothing to keep.
      if (id === null && session.transport.sessionId === undefined) void this.end(session);
      await send(response);
    } finally {
      request.signal.removeEventListener('abort', gone);
      session.busy -= 1;
      session.lastSeen = Date.now();
    }
  }

  /** End every session (serve --http stopping): their streams close, their servers with them. */
  async close(): Promise<void> {
    this.stopping = true;
    clearInterval(this.sweeper);
    await Promise.all([...this.live.values()].map((session) => this.end(session)));
  }

  /** A new session for `principal`'s `initialize`, or why there is none. */
  private open(principal: string): Session | Refusal {
    if (this.stopping) return { status: 503, code: -32000, message: 'the server is stopping' };
    const held = this.counts.get(principal) ?? 0;
    if (held >= this.limits.perPrincipal)
      return {
        status: 429,
        code: -32000,
        message: `this principal has ${held} MCP sessions open, the most CODEXEC_HTTP_MAX_MCP_SESSIONS_PER_PRINCIPAL allows: end one (DELETE /mcp with its Mcp-Session-Id) or let one expire`,
      };
    if (this.live.size >= this.limits.total)
      return {
        status: 503,
        code: -32000,
        message: `${this.live.size} MCP sessions are open on this server, the most CODEXEC_HTTP_MAX_MCP_SESSIONS allows: try again later`,
      };
    // 256 random bits: an id cannot be guessed, and only its principal's requests can use it anyway.
    const id = randomBytes(32).toString('base64url');
    const transport = new WebStandardStreamableHTTPServerTransport({
      sessionIdGenerator: () => id,
      maxRequestBodySize: this.limits.maxBodyBytes,
    });
    // Set before the server connects (which keeps it): however the transport closes (DELETE, the
    // idle sweep, the server stopping), the session is forgotten.
    transport.onclose = () => this.forget(id);
    const server = this.factory(principal);
    const connected = server.connect(transport);
    const session: Session = { id, principal, server, transport, connected, lastSeen: 0, busy: 0 };
    // Counted before anything is awaited: concurrent initializes cannot pass the caps together.
    this.live.set(id, session);
    this.counts.set(principal, held + 1);
    return session;
  }

  private find(id: string, principal: string): Session | Refusal {
    const session = this.live.get(id);
    return session && session.principal === principal ? session : NOT_FOUND;
  }

  /**
   * The client went away before its answer: without an event store the answer could never reach
   * it, so its requests are cancelled (as the client would with notifications/cancelled) rather
   * than run on for nobody. The session stays.
   */
  private cancelled(session: Session, parsed: unknown, authInfo: AuthInfo): void {
    // One message: a batch never gets here (route.ts refuses it).
    if (!isJSONRPCRequest(parsed)) return;
    session.transport.onmessage?.(
      {
        jsonrpc: '2.0',
        method: 'notifications/cancelled',
        params: { requestId: parsed.id, reason: 'the client disconnected' },
      },
      { authInfo },
    );
  }

  private sweep(): void {
    const now = Date.now();
    for (const session of this.live.values()) {
      if (session.busy === 0 && now - session.lastSeen > this.limits.idleMs) {
        log('debug', `http: MCP session of ${session.principal} idle, ended`);
        void this.end(session);
      }
    }
  }

  private async end(session: Session): Promise<void> {
    this.forget(session.id);
    // Closing the server closes its transport: open streams end, their keep-alive timers stop.
    await session.server.close().catch(() => {});
    await session.transport.close().catch(() => {});
  }

  private forget(id: string): void {
    const session = this.live.get(id);
    if (!session) return;
    this.live.delete(id);
    const held = (this.counts.get(session.principal) ?? 1) - 1;
    if (held > 0) this.counts.set(session.principal, held);
    else this.counts.delete(session.principal);
  }
}

interface Refusal {
  readonly status: number;
  readonly code: number;
  readonly message: string;
}

function refusal({ status, code, message }: Refusal): Response {
  return Response.json({ jsonrpc: '2.0', id: null, error: { code, message } }, { status });
}

function isInitialize(parsed: unknown): boolean {
  return isInitializeRequest(parsed as never);
}

/**
 * A POST body as JSON when it may be a session's (an Mcp-Session-Id, or `initialize` in it);
 * undefined otherwise, and for a body that is not JSON (the transport answers that).
 */
export function parseForSession(headers: Headers, body: Buffer | undefined): unknown {
  if (!body || body.length === 0) return undefined;
  if (!headers.has('mcp-session-id') && !body.includes('initialize')) return undefined;
  try {
    return JSON.parse(body.toString('utf8'));
  } catch {
    return undefined;
  }
}
