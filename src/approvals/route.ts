import type { InputRequiredResult } from '@modelcontextprotocol/server';
import type { Approver } from '../config/index.js';
import type { Metrics } from '../metrics/index.js';
import { phase } from '../traces/index.js';
import type { ClientChannel } from './client.js';
import type { ApprovalQueue } from './dashboard.js';
import type { PendingApprovals } from './pending.js';
import type { Question, Reply } from './question.js';

/** What became of a question: its answer and who gave it, the 2026-era "ask first", or nobody to ask. */
export type Routed =
  | {
      readonly kind: 'answered';
      readonly reply: Reply;
      readonly by: 'client' | 'dashboard';
      /** The dashboard's decider (a principal in CODEXEC_HTTP_APPROVERS). */
      readonly decider?: string;
    }
  | { readonly kind: 'pending'; readonly result: InputRequiredResult }
  | { readonly kind: 'nobody'; readonly why: string };

/**
 * Approval routing: every question a run raises (may this code run, may this file be written, may
 * the running code reach this host) is put here, and who may answer follows CODEXEC_APPROVER
 * whatever asked — `client`: the MCP client only; `dashboard`: serve --http's page only, whatever
 * the client could answer; `both`: each where it can be asked, the first answer winning and the
 * other withdrawn. Every question also takes a place among the pending approvals (a bound for
 * the server and one for each principal) until it is answered.
 */
export class ApprovalRouter {
  constructor(
    private readonly approver: Approver,
    /** serve --http's queue (stdio has none: its approver is the client). */
    private readonly queue: ApprovalQueue | undefined,
    private readonly pending: PendingApprovals,
    private readonly metrics: Metrics,
  ) {}

  /** Why nobody could answer a question here (the client cannot be asked, no dashboard does), or undefined. */
  nobody(client: ClientChannel): string | undefined {
    if (this.dashboard) return undefined;
    if (this.approver === 'dashboard') return 'CODEXEC_APPROVER=dashboard needs serve --http';
    return client.kind === 'none' ? client.why : undefined;
  }

  /**
   * A place among the pending approvals for one question of `principal` (its release returned),
   * or LIMIT_REACHED. A task that asks inside takes its place before it starts, so that the call
   * itself is refused.
   */
  hold(principal: string): () => void {
    return this.pending.enter(principal);
  }

  /**
   * Put `question` of `principal` to whoever may answer it, holding `held` (or a place taken
   * now) until then. `signal`: the call, task or connection the question is for (it ended: the
   * question is withdrawn everywhere).
   */
  async ask(
    principal: string,
    question: Question,
    client: ClientChannel,
    signal: AbortSignal,
    held?: () => void,
  ): Promise<Routed> {
    const why = this.nobody(client);
    if (why) {
      held?.();
      return { kind: 'nobody', why };
    }
    const release = held ?? this.hold(principal);
    const waited = phase('approval wait');
    try {
      const routed = await this.route(principal, question, client, signal);
      if (routed.kind === 'pending') this.metrics.approvalAsked();
      if (routed.kind === 'answered') this.metrics.approvalAnswered(routed.reply.kind === 'decided');
      return routed;
    } finally {
      waited?.();
      release();
    }
  }

  private get dashboard(): ApprovalQueue | undefined {
    return this.approver === 'client' ? undefined : this.queue;
  }

  private async route(
    principal: string,
    question: Question,
    client: ClientChannel,
    signal: AbortSignal,
  ): Promise<Exclude<Routed, { kind: 'nobody' }>> {
    const queue = this.dashboard;
    const asksClient = this.approver !== 'dashboard' && client.kind !== 'none';
    // A 2026-era plain call is answered input_required at once: only its client can answer it,
    // and only a question about running code comes from one (the channel says so).
    if (asksClient && client.kind === 'retry' && question.kind === 'run') {
      const answer = await client.ask(question.form);
      return answer.kind === 'pending' ? answer : { kind: 'answered', reply: answer, by: 'client' };
    }
    this.metrics.approvalAsked();
    const answered = new AbortController();
    const withdraw = AbortSignal.any([signal, answered.signal]);
    const asked: Promise<Exclude<Routed, { kind: 'nobody' | 'pending' }>>[] = [];
    if (queue)
      asked.push(
        queue.ask(principal, question, withdraw).then(({ decider, ...reply }) => ({
          kind: 'answered' as const,
          reply,
          by: 'dashboard' as const,
          ...(decider !== undefined && { decider }),
        })),
      );
    if (asksClient && client.kind === 'wait')
      asked.push(
        client.ask(question, withdraw).then((reply) => ({ kind: 'answered' as const, reply, by: 'client' })),
      );
    if (asked.length === 0) throw new Error(`approval routing: nobody to ask (${client.kind} client)`);
    try {
      // The first answer wins; the other request is withdrawn (the card leaves the page, the
      // task's input request is taken back), so a late answer from the other side finds nothing.
      return await Promise.race(asked);
    } finally {
      answered.abort();
    }
  }
}
