import { createHash, randomUUID } from 'node:crypto';
import {
  CLIENT_CAPABILITIES_META_KEY,
  type ClientCapabilities,
  createRequestStateCodec,
  inputRequired,
  inputResponse,
  type McpServer,
  type RequestId,
  type ServerContext,
} from '@modelcontextprotocol/server';
import type { TaskRun } from '../tasks/index.js';
import { currentPrincipal } from '../util/index.js';
import { type Answer, type ApprovalForm, paramsOf, type Question, type Reply, read } from './question.js';
import type { SpentTickets } from './spent.js';
import type { ViewApprovals } from './view.js';

type WaitAsk = (question: Question, withdraw: AbortSignal) => Promise<Reply>;

/** How the client can be asked from where a question arises (ApprovalAsker.channel). */
export type ClientChannel =
  | { readonly kind: 'none'; readonly why: string }
  /** While the call or its task waits: a 2025-era elicitation, a 2026-era task's input request. */
  | { readonly kind: 'wait'; readonly ask: WaitAsk }
  /** A 2026-era plain call: answered input_required now; the retry carries the answer. */
  | { readonly kind: 'retry'; ask(form: ApprovalForm): Promise<Answer> };

const KEY = 'approval';

/** Why a 2025-era request over HTTP without an MCP session can ask its client nothing. */
export const SESSIONLESS =
  'this 2025-era request came over HTTP without an MCP session (no Mcp-Session-Id from an initialize, or ' +
  'forwarded to the replica its codexec session lives on), so a server instance of its own, which never saw ' +
  'the client, answers it';
/** How long past its answer window a spent ticket is remembered (clocks of replicas differ a little). */
const SPENT_MARGIN_MS = 60_000;
interface Ticket {
  /** Fingerprint of what was shown, so an answer approves exactly that code. */
  readonly f: string;
  /** When the form was issued (ms): a later answer than the timeout is no answer. */
  readonly at: number;
  /** Its nonce: an answer it carries is read once (SpentTickets). */
  readonly n: string;
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
   * `currentTask`: the task the caller runs in, if any (the server's tasks keep it), which a
   * 2026-era question is asked through. `onCallStream`: how a 2025-era call's form goes on the
   * call's own stream (HTTP), so a client without the session's GET stream is asked too.
   */
  constructor(
    private readonly server: McpServer,
    private readonly timeoutMs: number,
    ticketKey: Uint8Array,
    readonly currentTask: () => TaskRun | undefined,
    /** The options that send a request on the call's own stream while the call is open. */
    private readonly onCallStream: (ctx: ServerContext) => { relatedRequestId?: RequestId },
    private readonly spent: SpentTickets,
    /**
     * The client's MCP Apps view, when it declared the extension: it may answer what the client
     * is asked while the call waits, as the client's own form may (the first answer counts).
     */
    private readonly views?: { readonly board: ViewApprovals; shows(ctx: ServerContext): boolean },
  ) {
    this.tickets = createRequestStateCodec<Ticket>({ key: ticketKey, ttlSeconds: 24 * 3600 });
  }

  /**
   * Why this client cannot be asked, or undefined when it can. Over HTTP a 2025-era request
   * without an MCP session is answered by a server of its own, which never saw the client's
   * initialize nor could route its answer back; one in a session (Mcp-Session-Id) can be asked.
   */
  cannotAsk(ctx: ServerContext): string | undefined {
    if (ctx.http && !this.modernRequest(ctx) && !this.server.server.getClientVersion()) {
      return `${SESSIONLESS}: it cannot ask for approval (a client that initializes and sends back the Mcp-Session-Id it gets, or speaks MCP 2026-07-28, can be asked)`;
    }
    if (!this.canAsk(ctx)) {
      return 'the client cannot show an approval form (it declared no elicitation capability)';
    }
    return undefined;
  }

  /**
   * How the client can be asked a question of `kind` from here (this request, and its task when
   * inside one). A host is asked while code runs, which a 2026-era plain call cannot pause for.
   */
  channel(ctx: ServerContext, kind: Question['kind']): ClientChannel {
    const why = this.cannotAsk(ctx);
    if (why) return { kind: 'none', why };
    // In a task (either era), the task is how the client is asked: its call has been answered.
    const task = this.currentTask();
    if (task)
      return {
        kind: 'wait',
        ask: this.withView(ctx, (question, withdraw) => this.askInTask(task, question, withdraw)),
      };
    if (!this.modernRequest(ctx))
      return {
        kind: 'wait',
        ask: this.withView(ctx, (question, withdraw) => this.askNow(ctx, question, withdraw)),
      };
    if (kind === 'host')
      return { kind: 'none', why: 'a 2026-era call cannot be paused mid-run to ask (a task can)' };
    return { kind: 'retry', ask: (form) => this.askByRetry(ctx, form) };
  }

  /**
   * `ask`, and the client's view beside it when it shows one: whichever answers first is the
   * client's answer, and the other is withdrawn (the form taken back, the card gone).
   */
  private withView(ctx: ServerContext, ask: WaitAsk): WaitAsk {
    const views = this.views;
    if (!views?.shows(ctx)) return ask;
    const principal = currentPrincipal();
    return async (question, withdraw) => {
      const answered = new AbortController();
      const signal = AbortSignal.any([withdraw, answered.signal]);
      try {
        return await Promise.race([ask(question, signal), views.board.ask(principal, question, signal)]);
      } finally {
        answered.abort();
      }
    };
  }

  /** Whether the client declared form elicitation: per request (2026 era) or at initialize (2025). */
  private canAsk(ctx: ServerContext): boolean {
    const capabilities = clientCapabilities(this.server, ctx);
    const elicitation = capabilities?.elicitation as Record<string, unknown> | undefined;
    if (!elicitation) return false;
    // An empty object is form mode (2025-06 clients); a url-only client cannot show a form.
    return elicitation.form !== undefined || elicitation.url === undefined;
  }

  /**
   * A 2026-era plain call's question: answered input_required at once, read from the retry that
   * carries the answer and our ticket.
   */
  private async askByRetry(ctx: ServerContext, form: ApprovalForm): Promise<Answer> {
    const params = paramsOf({ kind: 'run', form });
    // Only the 2026 era's ticket binds the answer to the code (a hash of all of it: ~2 ms a MB).
    const fingerprint = fingerprintOf(form);
    const response = inputResponse(ctx.mcpReq.inputResponses, KEY);
    const ticket = response.kind === 'missing' ? undefined : await this.ticket(ctx, fingerprint);
    // A ticket answers once: the same retry sent again is asked afresh, never run again.
    const fresh =
      ticket !== undefined &&
      (await this.spent.claim(`ticket:${ticket.n}`, ticket.at + this.timeoutMs + SPENT_MARGIN_MS));
    if (response.kind !== 'elicit' || !ticket || !fresh) {
      const requestState = await this.tickets.mint({ f: fingerprint, at: Date.now(), n: randomUUID() });
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
   * Inside a task, which can wait: the question becomes the task's input request (the task reads
   * input_required until it is answered: by tasks/update in the 2026 era, by the client's answer
   * to the elicitation tasks/result sends it in the 2025 era; a host's key is `egress:<host>:<port>`);
   * no answer within the timeout is a refusal. `withdraw` takes the request back (the call ended,
   * or CODEXEC_APPROVER=both and the dashboard answered first).
   */
  private async askInTask(run: TaskRun, question: Question, withdraw: AbortSignal): Promise<Reply> {
    const key = question.kind === 'run' ? KEY : `egress:${question.form.host}:${question.form.port}`;
    const timeout = AbortSignal.timeout(this.timeoutMs);
    const stop = AbortSignal.any([timeout, withdraw]);
    try {
      const asked = await run.ask(key, inputRequired.elicit(paramsOf(question)), stop);
      const response = inputResponse({ [key]: asked }, key);
      if (response.kind !== 'elicit') return { kind: 'refused', why: 'the answer was no elicitation result' };
      return read(response.action, response.content);
    } catch (error) {
      if (timeout.aborted && !run.signal.aborted) return this.late();
      return { kind: 'refused', why: `the approval request ended unanswered (${(error as Error).message})` };
    }
  }

  /**
   * Ask now, while the call waits (a 2025-era request's elicitation; a host is asked while code
   * runs). A 2026-era plain call cannot be paused for a round trip: the caller checks.
   */
  private async askNow(ctx: ServerContext, question: Question, withdraw: AbortSignal): Promise<Reply> {
    try {
      const result = await ctx.mcpReq.elicitInput(paramsOf(question), {
        // On the call's own stream (HTTP): a client need not open the session's GET stream.
        ...this.onCallStream(ctx),
        timeout: this.timeoutMs,
        signal: AbortSignal.any([ctx.mcpReq.signal, withdraw]),
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

/** The fingerprint a ticket carries: a hash of everything the form showed. */
function fingerprintOf(form: ApprovalForm): string {
  // Whose call it is too: another principal's retry cannot carry this answer.
  const shown = JSON.stringify([
    currentPrincipal(),
    form.tool,
    form.language,
    form.sessionId,
    form.code,
    form.powers ?? null,
    form.place ?? null,
  ]);
  return createHash('sha256').update(shown).digest('base64url');
}

/** What the client declared it can do: per request (2026 era) or at initialize (2025). */
export function clientCapabilities(server: McpServer, ctx: ServerContext): ClientCapabilities | undefined {
  return isModernRequest(server, ctx)
    ? (ctx.mcpReq.envelope as Record<string, ClientCapabilities | undefined> | undefined)?.[
        CLIENT_CAPABILITIES_META_KEY
      ]
    : server.server.getClientCapabilities();
}

/** Whether a request is of the 2026-07-28 era (per-request envelope), not a 2025-era connection's. */
export function isModernRequest(server: McpServer, ctx: ServerContext): boolean {
  const version = server.server.getNegotiatedProtocolVersion();
  return version !== undefined ? version >= '2026-07-28' : ctx.mcpReq.envelope !== undefined;
}
