import { randomUUID } from 'node:crypto';
import { CodexecError } from '../errors/index.js';
import type { Decision, Question, Reply } from './question.js';

/** Code shown on a card: the approval form's bound (the elicitation message shows as much). */
const MAX_CODE_CHARS = 8000;

/** One approval waiting in serve --http's dashboard (CODEXEC_APPROVER=dashboard or both). */
export interface QueuedApproval {
  readonly id: string;
  /** Whose call waits: never the one who may decide it. */
  readonly principal: string;
  /** `run`: may this code run (or this write happen); `host`: may the running code connect. */
  readonly kind: 'run' | 'host';
  readonly tool: string;
  /** The code's language; null for a host. */
  readonly language: string | null;
  readonly session_id: string | null;
  /** The code, cut at MAX_CODE_CHARS; `code_chars` is its whole length ('' and 0 for a host). */
  readonly code: string;
  readonly code_chars: number;
  readonly powers: string | null;
  /** Where the code works (a run's), as the client's form shows it. */
  readonly place?: string | null;
  readonly reason: string;
  /** A host question's target. */
  readonly host?: string;
  readonly port?: number;
  readonly asked_at: number;
}

/** The dashboard's answer, and who gave it (absent when nobody did: late, withdrawn). */
export type DashboardReply = Reply & { readonly decider?: string };

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
  readonly answer: (reply: DashboardReply) => void;
}

/**
 * Approvals waiting on other replicas (CODEXEC_STORE=postgres: share.ts): the queue
 * lists them beside its own and sends a decision on one to its owner.
 */
export interface ApprovalPeers {
  /**
   * Hand `id`'s decision by `decider` (an approver) to the replica it waits on; the approval, or
   * undefined when not waiting. Refuses (FORBIDDEN) the decider's own call's approval.
   */
  decide(id: string, decision: Decision, decider: string): Promise<QueuedApproval | undefined>;
  /** Fetch the approvals waiting on the other live replicas now (setRemote). */
  refresh(): Promise<void>;
}

interface Watcher {
  /** undefined: every principal's approvals (an admin's or an approver's page). */
  readonly principal: string | undefined;
  readonly send: (event: ApprovalEvent) => void;
}

/**
 * The approvals waiting for an answer from the dashboard, in memory: the gate asks here and
 * waits; the page lists them (its principal's, or all for an admin or an approver) and the
 * approvers (CODEXEC_HTTP_APPROVERS) decide, never on their own calls: whoever's call waits is
 * not who lets it through. Each waits at most the approval timeout; a signal (the call or task
 * ended, the client answered first) withdraws it. Bounded by CODEXEC_MAX_PENDING_APPROVALS and its
 * per-principal share, which the gate counts before asking.
 */
export class ApprovalQueue {
  private readonly waiting = new Map<string, Waiting>();
  private readonly watchers = new Set<Watcher>();
  /** Other replicas' waiting approvals, as last seen (setRemote). */
  private remote = new Map<string, QueuedApproval>();
  private peers: ApprovalPeers | undefined;
  private readonly localListeners = new Set<(event: ApprovalEvent) => void>();

  constructor(
    private readonly timeoutMs: number,
    /** CODEXEC_HTTP_APPROVERS: who may decide. */
    private readonly approvers: readonly string[],
  ) {}

  /** Wait for the dashboard's answer to `question`, asked by `principal`. Never rejects. */
  ask(principal: string, question: Question, signal: AbortSignal): Promise<DashboardReply> {
    if (signal.aborted) return Promise.resolve(WITHDRAWN);
    const approval = card(randomUUID(), principal, question);
    return new Promise<DashboardReply>((resolve) => {
      const end = (
        reply: DashboardReply,
        outcome: Extract<ApprovalEvent, { type: 'approval_gone' }>['outcome'],
      ) => {
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

  /**
   * As list(), with the other replicas' approvals fetched now: GET /api/approvals answers what
   * waits anywhere, whether or not a page is watching (the watch keeps them fetched meanwhile).
   */
  async listAnywhere(principal: string | undefined): Promise<QueuedApproval[]> {
    await this.peers?.refresh();
    return this.list(principal);
  }

  /** Whether `principal` may decide approvals (other principals' only). */
  mayDecide(principal: string): boolean {
    return this.approvers.includes(principal);
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
   * Answer approval `id` as `decider`, here or on the replica it waits on. Who is no approver is
   * refused whatever the id (nobody learns what others wait on); an approver's own call's approval
   * is refused too, and stays waiting for another approver.
   */
  async decideAnywhere(id: string, decision: Decision, decider: string): Promise<QueuedApproval> {
    this.checkApprover(decider);
    if (this.waiting.has(id) || !this.peers) return this.decide(id, decision, decider);
    const approval = await this.peers.decide(id, decision, decider);
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

  /** Answer approval `id`, waiting here, as `decider`: refused as decideAnywhere says. */
  decide(id: string, decision: Decision, decider: string): QueuedApproval {
    this.checkApprover(decider);
    const entry = this.waiting.get(id);
    if (!entry) throw notWaiting(id);
    if (entry.approval.principal === decider) throw ownCall(decider);
    return this.settle(id, decision, decider) as QueuedApproval;
  }

  /**
   * Answer approval `id`, waiting here, with a decision another replica took (and checked, as
   * decide does, when it wrote it); undefined when it is no longer waiting.
   */
  settle(id: string, decision: Decision, decider: string): QueuedApproval | undefined {
    const entry = this.waiting.get(id);
    entry?.answer(
      decision === 'deny'
        ? { kind: 'refused', why: `denied from the dashboard by ${decider}`, decider }
        : { kind: 'decided', decision, decider },
    );
    return entry?.approval;
  }

  private checkApprover(principal: string): void {
    if (!this.mayDecide(principal))
      throw new CodexecError(
        'FORBIDDEN',
        `${principal} may not decide approvals: only the principals in CODEXEC_HTTP_APPROVERS ` +
          '(default CODEXEC_HTTP_ADMINS) do, and never on their own calls',
      );
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
  new CodexecError('NOT_FOUND', `no approval ${id} is waiting (answered, withdrawn, or timed out)`);

/** The one refusal of an approver: the approval its own call waits on. */
export const ownCall = (principal: string) =>
  new CodexecError(
    'FORBIDDEN',
    `${principal} is the principal whose call waits on this approval: another approver ` +
      '(CODEXEC_HTTP_APPROVERS) decides it. It is still waiting',
  );

/** What the page (or the client's app view) shows of a question (the code cut at MAX_CODE_CHARS). */
export function card(id: string, principal: string, question: Question): QueuedApproval {
  const asked = { id, principal, kind: question.kind, asked_at: Date.now() };
  if (question.kind === 'host') {
    const { tool, sessionId, host, port } = question.form;
    return {
      ...asked,
      tool,
      language: null,
      session_id: sessionId,
      code: '',
      code_chars: 0,
      powers: null,
      reason: `the running code asks to connect to ${host}:${port}, which is not on CODEXEC_ALLOWED_DOMAINS`,
      host,
      port,
    };
  }
  const { form } = question;
  return {
    ...asked,
    tool: form.tool,
    language: form.language,
    session_id: form.sessionId,
    code: form.code.slice(0, MAX_CODE_CHARS),
    code_chars: form.code.length,
    powers: form.powers ?? null,
    place: form.place ?? null,
    reason: form.reason,
  };
}
