import { createHash } from 'node:crypto';
import { isIP } from 'node:net';
import {
  CLIENT_CAPABILITIES_META_KEY,
  type ClientCapabilities,
  createRequestStateCodec,
  type ElicitRequestFormParams,
  type InputRequiredResult,
  inputRequired,
  inputResponse,
  type McpServer,
  type ServerContext,
} from '@modelcontextprotocol/server';
import { z } from 'zod';
import type { TaskRun } from '../tasks/index.js';

export const DECISIONS = ['approve', 'deny', 'approve_trust_session'] as const;
export type Decision = (typeof DECISIONS)[number];

/** What the person approving sees. */
export interface ApprovalForm {
  readonly tool: string;
  readonly language: string;
  readonly sessionId: string | null;
  readonly code: string;
  /** Code mode: what else the run may do (call these tools, ask the model). */
  readonly powers?: string | undefined;
  /** Why this run asks (every run asks, or the rule that asked). */
  readonly reason: string;
}

export type Answer =
  | { readonly kind: 'decided'; readonly decision: Exclude<Decision, 'deny'> }
  | { readonly kind: 'refused'; readonly why: string }
  /** 2026 era: return this from the handler; the client asks and retries the call. */
  | { readonly kind: 'pending'; readonly result: InputRequiredResult };

/** An answer read from the client (not the 2026-era "ask first" result). */
export type Reply = Exclude<Answer, { readonly kind: 'pending' }>;

const KEY = 'approval';
const MAX_SHOWN_CHARS = 8000;
const answerSchema = z.object({ decision: z.enum(DECISIONS) });
interface Ticket {
  /** Fingerprint of what was shown, so an answer approves exactly that code. */
  readonly f: string;
  /** When the form was issued (ms): a later answer than the timeout is no answer. */
  readonly at: number;
}

/**
 * Asks the client to approve a run with an elicitation form, in both protocol eras.
 *
 * The form is built once with the SDK's era-neutral `inputRequired.elicit(…)`. On the 2026 era
 * it rides the multi-round-trip flow: the handler returns `input_required`, the client asks
 * and retries the call with the answer and our signed ticket (HMAC, per-process key) binding
 * the answer to this code and the time it was asked. On the 2025 era the same form goes out as
 * a server→client `elicitation/create` with our own timeout: the SDK's legacy shim would also
 * fulfil the `input_required` return, but when nobody answers it ends the call with its own
 * untyped text, and the contract needs `APPROVAL_DENIED` and an audit entry then.
 */
export class ApprovalAsker {
  private readonly tickets: ReturnType<typeof createRequestStateCodec<Ticket>>;

  /**
   * `ticketKey` is the server process's (Services): over HTTP every request gets a server of its
   * own, and the retry that carries the answer must verify a ticket another one minted.
   */
  constructor(
    private readonly server: McpServer,
    private readonly timeoutMs: number,
    ticketKey: Uint8Array,
  ) {
    this.tickets = createRequestStateCodec<Ticket>({ key: ticketKey, ttlSeconds: 24 * 3600 });
  }

  /**
   * Why this client cannot be asked, or undefined when it can. Over HTTP the SDK serves 2025-era
   * requests statelessly: a fresh server per request, which neither saw the client's initialize
   * nor could route its answer back, so no 2025-era request over HTTP can be asked.
   */
  cannotAsk(ctx: ServerContext): string | undefined {
    if (ctx.http && !this.modernRequest(ctx)) {
      return (
        'over HTTP, 2025-era MCP requests are served statelessly, so the server cannot ask the client ' +
        'for approval (a client speaking MCP 2026-07-28 can be asked)'
      );
    }
    if (!this.canAsk(ctx)) {
      return 'the client cannot show an approval form (it declared no elicitation capability)';
    }
    return undefined;
  }

  /** Whether the client declared form elicitation: per request (2026 era) or at initialize (2025). */
  private canAsk(ctx: ServerContext): boolean {
    const capabilities = this.modernRequest(ctx)
      ? (ctx.mcpReq.envelope as Record<string, ClientCapabilities | undefined> | undefined)?.[
          CLIENT_CAPABILITIES_META_KEY
        ]
      : this.server.server.getClientCapabilities();
    const elicitation = capabilities?.elicitation as Record<string, unknown> | undefined;
    if (!elicitation) return false;
    // An empty object is form mode (2025-06 clients); a url-only client cannot show a form.
    return elicitation.form !== undefined || elicitation.url === undefined;
  }

  async ask(ctx: ServerContext, form: ApprovalForm): Promise<Answer> {
    const params = formParams(form);
    if (!this.modernRequest(ctx)) return this.askNow(ctx, params);
    // Only the 2026 era's ticket binds the answer to the code (a hash of all of it: ~2 ms a MB).
    const fingerprint = fingerprintOf(form);
    const response = inputResponse(ctx.mcpReq.inputResponses, KEY);
    const ticket = response.kind === 'missing' ? undefined : await this.ticket(ctx, fingerprint);
    if (response.kind !== 'elicit' || !ticket) {
      const requestState = await this.tickets.mint({ f: fingerprint, at: Date.now() });
      return {
        kind: 'pending',
        result: inputRequired({ inputRequests: { [KEY]: inputRequired.elicit(params) }, requestState }),
      };
    }
    if (Date.now() - ticket.at > this.timeoutMs) return this.late();
    return read(response.action, response.content);
  }

  /** Whether a 2026-era call carries an answer to the approval form (a retry after input_required). */
  carriesAnswer(ctx: ServerContext): boolean {
    return inputResponse(ctx.mcpReq.inputResponses, KEY).kind !== 'missing';
  }

  /**
   * Inside a 2026-era task, which can wait: the form becomes the task's input request (the task
   * reads input_required until tasks/update answers it); no answer within the timeout is a refusal.
   */
  askInTask(run: TaskRun, form: ApprovalForm, withdraw?: AbortSignal): Promise<Reply> {
    return this.askThrough(run, KEY, formParams(form), withdraw);
  }

  /** askHost inside a 2026-era task: one request per host, its key `egress:<host>:<port>`. */
  askHostInTask(run: TaskRun, form: HostForm): Promise<Reply> {
    return this.askThrough(run, `egress:${form.host}:${form.port}`, hostFormParams(form));
  }

  /** `withdraw`: takes the request back (CODEXEC_APPROVER=both: the dashboard answered first). */
  private async askThrough(
    run: TaskRun,
    key: string,
    params: ElicitRequestFormParams,
    withdraw?: AbortSignal,
  ): Promise<Reply> {
    const timeout = AbortSignal.timeout(this.timeoutMs);
    const stop = withdraw ? AbortSignal.any([timeout, withdraw]) : timeout;
    try {
      const response = inputResponse({ [key]: await run.ask(key, inputRequired.elicit(params), stop) }, key);
      if (response.kind !== 'elicit') return { kind: 'refused', why: 'the answer was no elicitation result' };
      return read(response.action, response.content);
    } catch (error) {
      if (timeout.aborted && !run.signal.aborted) return this.late();
      return { kind: 'refused', why: `the approval request ended unanswered (${(error as Error).message})` };
    }
  }

  /**
   * Ask now, while code runs, whether it may reach a host off the egress allowlist: a 2025-era
   * request's elicitation (a 2026-era call cannot be paused for a round trip: the caller checks).
   */
  askHost(ctx: ServerContext, form: HostForm): Promise<Reply> {
    return this.askNow(ctx, hostFormParams(form));
  }

  private async askNow(ctx: ServerContext, params: ElicitRequestFormParams): Promise<Reply> {
    try {
      const result = await ctx.mcpReq.elicitInput(params, {
        timeout: this.timeoutMs,
        signal: ctx.mcpReq.signal,
      });
      return read(result.action, result.content);
    } catch (error) {
      if (/timed? ?out/i.test((error as Error).message)) return this.late();
      return { kind: 'refused', why: `the approval request failed (${(error as Error).message})` };
    }
  }

  private late(): Reply {
    return { kind: 'refused', why: `no answer within ${this.timeoutMs} ms (CODEXEC_APPROVAL_TIMEOUT_MS)` };
  }

  /** The echoed ticket, when it is ours, intact, and for this very code; else undefined. */
  private async ticket(ctx: ServerContext, fingerprint: string): Promise<Ticket | undefined> {
    const raw = ctx.mcpReq.requestState<unknown>();
    if (typeof raw !== 'string') return undefined;
    try {
      const ticket = await this.tickets.verify(raw, ctx);
      return ticket.f === fingerprint ? ticket : undefined;
    } catch {
      return undefined; // forged, altered or foreign: ask afresh rather than trust it
    }
  }

  /** Whether `ctx` is a 2026-era request (answers come back on a retried call, not mid-run). */
  modernRequest(ctx: ServerContext): boolean {
    return isModernRequest(this.server, ctx);
  }
}

function read(action: string, content: Record<string, unknown> | undefined): Reply {
  if (action === 'decline') return { kind: 'refused', why: 'the client declined the approval request' };
  if (action !== 'accept') return { kind: 'refused', why: 'the approval request was cancelled' };
  const parsed = answerSchema.safeParse(content ?? {});
  if (!parsed.success) return { kind: 'refused', why: 'the answer had no valid decision' };
  if (parsed.data.decision === 'deny') return { kind: 'refused', why: 'denied by the user' };
  return { kind: 'decided', decision: parsed.data.decision };
}

function fingerprintOf(form: ApprovalForm): string {
  const shown = JSON.stringify([form.tool, form.language, form.sessionId, form.code, form.powers ?? null]);
  return createHash('sha256').update(shown).digest('base64url');
}

function formParams(form: ApprovalForm): ElicitRequestFormParams {
  const shown =
    form.code.length > MAX_SHOWN_CHARS
      ? `${form.code.slice(0, MAX_SHOWN_CHARS)}\n[... ${form.code.length - MAX_SHOWN_CHARS} more characters ...]`
      : form.code;
  const trust = form.sessionId
    ? `trust session ${form.sessionId} from now on`
    : `trust ${form.tool} with ${form.language} on this connection from now on`;
  return {
    mode: 'form',
    message:
      `codexec asks to run ${form.language} code.\n` +
      `Tool: ${form.tool}\nLanguage: ${form.language}\nSession: ${form.sessionId ?? 'none (one-shot)'}\n` +
      (form.powers ? `The code may also: ${form.powers}\n` : '') +
      `Why you are asked: ${form.reason}\n\n${shown}`,
    requestedSchema: decisionSchema(
      `approve: run it once; deny: do not run it; approve_trust_session: run it and ${trust}`,
    ),
  };
}

/** The form's one field: a decision among DECISIONS, each explained. */
function decisionSchema(description: string): ElicitRequestFormParams['requestedSchema'] {
  return {
    type: 'object',
    properties: { decision: { type: 'string', title: 'Decision', description, enum: [...DECISIONS] } },
    required: ['decision'],
  };
}

/** What the person approving a connection sees: the host a running program asks for. */
export interface HostForm {
  readonly tool: string;
  readonly sessionId: string | null;
  readonly host: string;
  readonly port: number;
}

function hostFormParams(form: HostForm): ElicitRequestFormParams {
  const target = `${form.host}:${form.port}`;
  const trust = form.sessionId
    ? `allow ${target} in session ${form.sessionId} from now on`
    : `allow ${target} on this connection from now on`;
  return {
    mode: 'form',
    message:
      `Code running in ${form.tool}${form.sessionId ? ` (session ${form.sessionId})` : ''} asks to connect ` +
      `to ${target}, which is not on the server's allowed list (CODEXEC_ALLOWED_DOMAINS).` +
      // No DNS answer may point an approved name inward (ask is before resolution).
      (isIP(form.host) === 0 ? ' Approved, the name reaches public addresses only.' : ''),
    requestedSchema: decisionSchema(
      `approve: allow it for this run; deny: refuse it; approve_trust_session: ${trust}`,
    ),
  };
}

/** Whether a request is of the 2026-07-28 era (per-request envelope), not a 2025-era connection's. */
export function isModernRequest(server: McpServer, ctx: ServerContext): boolean {
  const version = server.server.getNegotiatedProtocolVersion();
  return version !== undefined ? version >= '2026-07-28' : ctx.mcpReq.envelope !== undefined;
}
