import type { InputRequiredResult, ServerContext } from '@modelcontextprotocol/server';
import type { Approver } from '../config/index.js';
import type { LaneUser } from '../egress/index.js';
import { ApprovalDeniedError, ApprovalUnavailableError } from '../errors/index.js';
import type { Metrics } from '../metrics/index.js';
import type { AuditSink } from '../policy/index.js';
import { currentPrincipal } from '../util/index.js';
import { type Approval, type Attempt, audit, type RunFacts, type Verdict } from './audit.js';
import type { ApprovalAsker } from './client.js';
import type { ApprovalQueue } from './dashboard.js';
import { decided } from './decide.js';
import type { PendingApprovals } from './pending.js';
import { type TrustScope, trustKey } from './question.js';
import { ApprovalRouter } from './route.js';

/** What one gate's approvals are made of (one gate per connection, or per request over HTTP). */
export interface ApprovalsOptions {
  /** The MCP client as an approver, reached through this connection. */
  readonly asker: ApprovalAsker;
  /** CODEXEC_APPROVER: who answers every question this gate raises. */
  readonly approver: Approver;
  /** serve --http's dashboard (stdio has none: its approver is the client). */
  readonly dashboard: ApprovalQueue | undefined;
  /** CODEXEC_MAX_PENDING_APPROVALS and its per-principal share. */
  readonly pending: PendingApprovals;
  readonly metrics: Metrics;
  readonly audit: AuditSink;
  /**
   * What the user trusted so far: `session:<id>` for a REPL session, `<tool>:<language>` for
   * one-shot runs, `egress:<session>:<host>:<port>` for a host. Shared when it outlives the gate
   * (serve --http: one set per principal), so trust never leaks from one client to another.
   */
  readonly trusted: Set<string>;
  /** Where `trusted` holds, as the forms tell the person approving. */
  readonly trustScope: TrustScope;
}

/** Why a run asks: the policy's reason, and the rule that asked (null: every run asks). */
export interface AskedBy {
  readonly reason: string;
  readonly rule: string | null;
}

/** A run's answer: approved, or (2026-era plain call) the input-required result that asks first. */
export type Answered =
  | { readonly kind: 'approved'; readonly approval: Approval }
  | { readonly kind: 'pending'; readonly result: InputRequiredResult };

/** A run found trusted already, or its question, asked once `answer` is called. */
export type Asked =
  | { readonly kind: 'trusted'; readonly approval: Approval }
  | {
      readonly kind: 'asked';
      /**
       * Put the question to whoever may answer it and read the decision; `signal` is the call or
       * task it waits for. A denial is audited and thrown (APPROVAL_DENIED).
       */
      answer(signal: AbortSignal): Promise<Answered>;
    };

/**
 * The one approval flow, for code to run and for a host the running code asks to reach:
 * - ask (here): trusted already? anybody to ask? a place among the pending approvals
 *   (pending.ts); what is asked and the form that shows it (question.ts);
 * - route (route.ts) to the approvers CODEXEC_APPROVER names: the MCP client (client.ts), the
 *   dashboard's queue (dashboard.ts; across replicas, share.ts); the first answer wins;
 * - decide (decide.ts): approved, trusted from now on, or denied, and by whom;
 * - audit (audit.ts): every refusal is written here; the gate writes an approved run's entry,
 *   with what it did, through `audit` once it ends.
 */
export class Approvals {
  private readonly asker: ApprovalAsker;
  private readonly router: ApprovalRouter;
  private readonly sink: AuditSink;
  private readonly trusted: Set<string>;
  private readonly trustScope: TrustScope;

  constructor(options: ApprovalsOptions) {
    this.asker = options.asker;
    this.router = new ApprovalRouter(options.approver, options.dashboard, options.pending, options.metrics);
    this.sink = options.audit;
    this.trusted = options.trusted;
    this.trustScope = options.trustScope;
  }

  /** Write the audit entry of `attempt` (never throws: a broken sink is loud on stderr). */
  audit(attempt: Attempt, verdict: Verdict, facts?: RunFacts): Promise<void> {
    return audit(this.sink, attempt, verdict, facts);
  }

  /**
   * Ask whether `attempt` may run. Refusals before anybody is asked are audited and thrown: nobody
   * can answer here (APPROVAL_UNAVAILABLE), too many approvals wait already (LIMIT_REACHED).
   */
  async ask(ctx: ServerContext, attempt: Attempt, asked: AskedBy): Promise<Asked> {
    const key = trustKey(attempt);
    if (this.trusted.has(key)) return { kind: 'trusted', approval: { approved_by: 'trusted_session' } };
    const refused = { approved: false, approved_by: null, rule: asked.rule } as const;
    const unavailable = this.router.nobody(this.asker.channel(ctx, 'run'));
    if (unavailable) {
      await this.audit(attempt, refused);
      throw new ApprovalUnavailableError(
        `this run needs approval (${asked.reason}), but ${unavailable}. Nothing ran. The server ` +
          'owner can set CODEXEC_APPROVAL=auto, or use a client that supports elicitation',
      );
    }
    const form = { ...attempt, reason: asked.reason, trustScope: this.trustScope };
    const question = { kind: 'run', form } as const;
    const principal = currentPrincipal();
    const held = await this.hold(attempt, refused);
    const answer = async (signal: AbortSignal): Promise<Answered> => {
      // The channel is read here: inside a task, the task is how the client is asked.
      const client = this.asker.channel(ctx, 'run');
      const routed = await this.router.ask(principal, question, client, signal, held);
      if (routed.kind === 'pending') return routed;
      const decision = decided(routed);
      if (decision.kind === 'denied') {
        await this.audit(attempt, {
          ...refused,
          ...(decision.decided_by && { decided_by: decision.decided_by }),
        });
        throw new ApprovalDeniedError(`not approved: ${decision.why}. Nothing ran`);
      }
      if (decision.trust) this.trusted.add(key);
      return { kind: 'approved', approval: decision.approval };
    };
    return { kind: 'asked', answer };
  }

  /**
   * Whether a call in a task scope asks inside its task (started at once) rather than on the call:
   * a 2025-era call always; a 2026-era one unless it is the retry that carries the answer to
   * input_required.
   */
  asksInTask(ctx: ServerContext): boolean {
    return !this.asker.modernRequest(ctx) || !this.asker.carriesAnswer(ctx);
  }

  /**
   * What asks, while the code runs, about a host off the egress allowlist (each host once per
   * run; "trust" allows it where trust holds, or in this session, from then on). Asked as any
   * question is: of the client where it can be asked mid-run (a 2025-era call's elicitation, a
   * 2026-era task's input request; a 2026-era plain call cannot pause), of the dashboard's
   * approvers under dashboard or both. Undefined where nobody can be asked: the host is refused
   * as any other. Called where the run starts.
   */
  hostAsker(ctx: ServerContext, tool: string, sessionId: string | null): LaneUser['ask'] {
    const client = this.asker.channel(ctx, 'host');
    if (this.router.nobody(client)) return undefined;
    // The proxy asks from its sockets' callbacks: the principal and the call are this request's.
    const principal = currentPrincipal();
    const call = this.asker.currentTask()?.signal ?? ctx.mcpReq.signal;
    const asked = new Map<string, Promise<boolean>>();
    return (host, port, signal) => {
      const key = `egress:${sessionId ?? ''}:${host}:${port}`;
      if (this.trusted.has(key)) return Promise.resolve(true);
      let answer = asked.get(key);
      if (!answer) {
        const form = { tool, sessionId, host, port, trustScope: this.trustScope };
        const question = { kind: 'host', form } as const;
        const withdraw = signal ? AbortSignal.any([call, signal]) : call;
        answer = this.router.ask(principal, question, client, withdraw).then((routed) => {
          // A host is never asked by retry (the channel says so): pending is no answer.
          const decision = routed.kind === 'pending' ? undefined : decided(routed);
          if (decision?.kind !== 'approved') return false;
          if (decision.trust) this.trusted.add(key);
          return true;
        });
        asked.set(key, answer);
      }
      return answer;
    };
  }

  /** A place among the pending approvals (its release returned), or the audited refusal past their bounds. */
  private async hold(attempt: Attempt, refused: Verdict): Promise<() => void> {
    try {
      return this.router.hold(currentPrincipal());
    } catch (error) {
      await this.audit(attempt, refused);
      throw error;
    }
  }
}
