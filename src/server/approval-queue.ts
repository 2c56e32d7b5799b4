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

  /** The approvals `principal` may see (undefined: all), oldest first. */
  list(principal: string | undefined): QueuedApproval[] {
    return [...this.waiting.values()]
      .map((entry) => entry.approval)
      .filter((approval) => principal === undefined || approval.principal === principal);
  }

  /**
   * Answer approval `id` as `principal` (undefined: an admin, who may answer anyone's). Another
   * principal's approval is NOT_FOUND, as one already answered is: nobody learns what others wait on.
   */
  decide(id: string, decision: Decision, principal: string | undefined): QueuedApproval {
    const entry = this.waiting.get(id);
    if (!entry || (principal !== undefined && entry.approval.principal !== principal)) {
      throw new CodexecError('NOT_FOUND', `no approval ${id} is waiting (answered, withdrawn, or not yours)`);
    }
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

  private tell(owner: string, event: ApprovalEvent): void {
    for (const watcher of this.watchers)
      if (watcher.principal === undefined || watcher.principal === owner) watcher.send(event);
  }
}
