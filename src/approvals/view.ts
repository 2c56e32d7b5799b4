import { randomUUID } from 'node:crypto';
import { CodexecError } from '../errors/index.js';
import { card, type QueuedApproval } from './dashboard.js';
import { type Decision, type Question, type Reply, trustShown } from './question.js';

/** What the client's app view shows of a question: the dashboard's card, and what trust would mean. */
export type ViewedApproval = Omit<QueuedApproval, 'principal'> & { readonly trust: string };

const WITHDRAWN: Reply = { kind: 'refused', why: 'the approval request was withdrawn' };

/**
 * The questions a client is asked, as its MCP Apps view may show them beside the client's own
 * approval form: the view answers for the client (its host proxies the view's tool call on the
 * same principal's behalf), so it answers only where the client would, and only its own
 * principal's questions. Each entry lives exactly as long as the client's question (the router's
 * withdraw signal ends both), so the pending-approval bounds already cover it.
 */
export class ViewApprovals {
  private readonly waiting = new Map<
    string,
    { readonly principal: string; readonly approval: ViewedApproval; readonly answer: (reply: Reply) => void }
  >();

  /** Wait for the view's answer to `question` of `principal`; resolves withdrawn once `signal` ends it. */
  ask(principal: string, question: Question, signal: AbortSignal): Promise<Reply> {
    if (signal.aborted || question.kind !== 'run') return never(signal);
    const { principal: _owner, ...shown } = card(randomUUID(), principal, question);
    const approval: ViewedApproval = { ...shown, trust: trustShown(question.form) };
    return new Promise<Reply>((resolve) => {
      const end = (reply: Reply) => {
        if (!this.waiting.delete(approval.id)) return;
        signal.removeEventListener('abort', onAbort);
        resolve(reply);
      };
      const onAbort = () => end(WITHDRAWN);
      this.waiting.set(approval.id, { principal, approval, answer: end });
      signal.addEventListener('abort', onAbort, { once: true });
    });
  }

  /** The questions waiting for `principal`'s client, oldest first. */
  list(principal: string): ViewedApproval[] {
    return [...this.waiting.values()]
      .filter((entry) => entry.principal === principal)
      .map((entry) => entry.approval)
      .sort((a, b) => a.asked_at - b.asked_at);
  }

  /**
   * Answer question `id` of `principal` with `decision`: NOT_FOUND when no such question of theirs
   * waits (another principal's is not found either: nobody learns what others wait on).
   */
  answer(principal: string, id: string, decision: Decision): ViewedApproval {
    const entry = this.waiting.get(id);
    if (!entry || entry.principal !== principal)
      throw new CodexecError('NOT_FOUND', `no approval ${id} is waiting (answered, withdrawn, or timed out)`);
    entry.answer(
      decision === 'deny'
        ? { kind: 'refused', why: 'denied by the user in the result view' }
        : { kind: 'decided', decision },
    );
    return entry.approval;
  }
}

/** A view that is not asked: it never answers, and is done when the question is. */
function never(signal: AbortSignal): Promise<Reply> {
  return new Promise((resolve) => {
    if (signal.aborted) resolve(WITHDRAWN);
    else signal.addEventListener('abort', () => resolve(WITHDRAWN), { once: true });
  });
}
