import { randomUUID } from 'node:crypto';
import { CodexecError } from '../errors/index.js';
import type { ApprovalForm, Decision, Reply } from './approval.js';

/** Code shown on a card: the approval form's bound (the elicitation message shows as much). */
const MAX_CODE_CHARS = 8000;

/** One approval waiting in serve --http's dashboard (CODEXEC_APPROVER=dashboard or both). */
export interface QueuedApproval {
  readonly id: string;
  readonly principal: string;
  readonly tool: string;
  readonly language: string;
  readonly session_id: string | null;
  /** The code, cut at MAX_CODE_CHARS; `code_chars` is its whole length. */
  readonly code: string;
  readonly code_chars: number;
  readonly powers: string | null;
  readonly reason: string;
  readonly asked_at: number;
}

/** What a watcher is told: an approval is waiting, or it is gone (answered, withdrawn, late). */
export type ApprovalEvent =
  | { readonly type: 'approval'; readonly approval: QueuedApproval }
  | {
      readonly type: 'approval_gone';
      readonly id: string;
      readonly outcome: 'approved' | 'denied' | 'withdrawn' | 'timed_out';
    };

const WITHDRAWN: Reply = { kind: 'refused', why: 'the approval request was withdrawn (the call ended)' };

interface Waiting {
  readonly approval: QueuedApproval;
  readonly answer: (reply: Reply) => void;
}

/**
 * Approvals waiting on other replicas (CODEXEC_STORE=postgres: approval-share.ts): the queue
 * lists them beside its own and sends a decision on one to its owner.
 */
export interface ApprovalPeers {
  /** Hand `id`'s decision to the replica it waits on; the approval, or undefined when not waiting. */
  decide(id: string, decision: Decision, principal: string | undefined): Promise<QueuedApproval | undefined>;
}

interface Watcher {
  /** undefined: every principal's approvals (an admin). */
  readonly principal: string | undefined;
  readonly send: (event: ApprovalEvent) => void;
}

/**
 * The approvals waiting for an answer from the dashboard, in memory: the gate asks here and
 * waits; the page lists them (its principal's, or all for an admin) and decides. Each waits at
 * most the approval timeout; a signal (the call or task ended, the client answered first)
 * withdraws it. Bounded by CODEXEC_MAX_PENDING_APPROVALS, which the gate counts before asking.
 */
export class ApprovalQueue {
  private readonly waiting = new Map<string, Waiting>();
  private readonly watchers = new Set<Watcher>();
  /** Other replicas' waiting approvals, as last seen (setRemote). */
  private remote = new Map<string, QueuedApproval>();
  private peers: ApprovalPeers | undefined;
  private readonly localListeners = new Set<(event: ApprovalEvent) => void>();

  constructor(private readonly timeoutMs: number) {}

  /** Wait for the dashboard's answer to `form`, asked by `principal`. Never rejects. */
  ask(principal: string, form: ApprovalForm, signal: AbortSignal): Promise<Reply> {
    if (signal.aborted) return Promise.resolve(WITHDRAWN);
    const approval: QueuedApproval = {
      id: randomUUID(),
      principal,
      tool: form.tool,
      language: form.language,
      session_id: form.sessionId,
      code: form.code.slice(0, MAX_CODE_CHARS),
      code_chars: form.code.length,
      powers: form.powers ?? null,
      reason: form.reason,
      asked_at: Date.now(),
    };
    return new Promise<Reply>((resolve) => {
      const end = (reply: Reply, outcome: Extract<ApprovalEvent, { type: 'approval_gone' }>['outcome']) => {
        if (!this.waiting.delete(approval.id)) return;
        clearTimeout(timer);
        signal.removeEventListener('abort', onAbort);
        this.tell(principal, { type: 'approval_gone', id: approval.id, outcome });
        resolve(reply);
      };
      const onAbort = () => end(WITHDRAWN, 'withdrawn');
      const timer = setTimeout(
        () =>
          end(
            { kind: 'refused', why: `no answer within ${this.timeoutMs} ms (CODEXEC_APPROVAL_TIMEOUT_MS)` },
            'timed_out',
          ),
        this.timeoutMs,
      );
      this.waiting.set(approval.id, {
        approval,
        answer: (reply) => end(reply, reply.kind === 'decided' ? 'approved' : 'denied'),
      });
      signal.addEventListener('abort', onAbort, { once: true });
      this.tell(principal, { type: 'approval', approval });
    });
  }

  /** The approvals `principal` may see (undefined: all), oldest first; other replicas' too. */
  list(principal: string | undefined): QueuedApproval[] {
    return [...[...this.waiting.values()].map((entry) => entry.approval), ...this.remote.values()]
      .filter((approval) => principal === undefined || approval.principal === principal)
      .sort((a, b) => a.asked_at - b.asked_at);
  }

  /** How many approvals wait here, on this replica. */
  get waitingHere(): number {
    return this.waiting.size;
  }

  /** Whether a dashboard page is watching (other replicas' approvals are worth fetching). */
  get watched(): boolean {
    return this.watchers.size > 0;
  }

  /** Link to the other replicas' approvals (a postgres store). */
  attachPeers(peers: ApprovalPeers): void {
    this.peers = peers;
  }

  /** Hear of this replica's own approvals come and go (to publish them to the other replicas). */
  onLocal(listener: (event: ApprovalEvent) => void): () => void {
    this.localListeners.add(listener);
    return () => this.localListeners.delete(listener);
  }

  /** The other replicas' waiting approvals now: watchers hear of the new ones and the gone ones. */
  setRemote(approvals: readonly QueuedApproval[]): void {
    const next = new Map(approvals.map((approval) => [approval.id, approval]));
    for (const [id, approval] of this.remote)
      if (!next.has(id))
        this.tell(approval.principal, { type: 'approval_gone', id, outcome: 'withdrawn' }, false);
    for (const [id, approval] of next)
      if (!this.remote.has(id)) this.tell(approval.principal, { type: 'approval', approval }, false);
    this.remote = next;
  }

  /**
   * Answer approval `id` here, or on the replica it waits on. Another principal's approval is
   * NOT_FOUND, as one already answered is: nobody learns what others wait on.
   */
  async decideAnywhere(
    id: string,
    decision: Decision,
    principal: string | undefined,
  ): Promise<QueuedApproval> {
    if (this.waiting.has(id) || !this.peers) return this.decide(id, decision, principal);
    const approval = await this.peers.decide(id, decision, principal);
    if (!approval) throw notWaiting(id);
    this.remote.delete(id);
    this.tell(
      approval.principal,
      {
        type: 'approval_gone',
        id,
        outcome: decision === 'deny' ? 'denied' : 'approved',
      },
      false,
    );
    return approval;
  }

  /**
   * Answer approval `id` as `principal` (undefined: an admin, who may answer anyone's). Another
   * principal's approval is NOT_FOUND, as one already answered is: nobody learns what others wait on.
   */
  decide(id: string, decision: Decision, principal: string | undefined): QueuedApproval {
    const entry = this.waiting.get(id);
    if (!entry || (principal !== undefined && entry.approval.principal !== principal)) throw notWaiting(id);
    entry.answer(
      decision === 'deny'
        ? { kind: 'refused', why: 'denied from the dashboard' }
        : { kind: 'decided', decision },
    );
    return entry.approval;
  }

  /** Hear of every approval `principal` may see come and go, until the returned function is called. */
  watch(principal: string | undefined, send: (event: ApprovalEvent) => void): () => void {
    const watcher = { principal, send };
    this.watchers.add(watcher);
    return () => this.watchers.delete(watcher);
  }

  private tell(owner: string, event: ApprovalEvent, local = true): void {
    if (local) for (const listener of this.localListeners) listener(event);
    for (const watcher of this.watchers)
      if (watcher.principal === undefined || watcher.principal === owner) watcher.send(event);
  }
}

const notWaiting = (id: string) =>
  new CodexecError('NOT_FOUND', `no approval ${id} is waiting (answered, withdrawn, or not yours)`);
