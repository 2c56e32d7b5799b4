import type { ApprovalForm, Reply } from './approval.js';
import type { ApprovalQueue } from './approval-queue.js';

/** An answer and who gave it, as the audit names it. */
export interface Answered {
  readonly reply: Reply;
  readonly by: 'client' | 'dashboard';
}

/**
 * CODEXEC_APPROVER=dashboard or both: ask the dashboard's queue and, when given, the client at the
 * same time. The first answer wins and the other request is withdrawn (the card leaves the page,
 * the task's input request is taken back), so a late answer from the other side finds nothing.
 * `signal`: the call or task the approval is for (ended, both are withdrawn).
 */
export async function firstAnswer(
  queue: ApprovalQueue,
  principal: string,
  form: ApprovalForm,
  signal: AbortSignal,
  client?: (withdraw: AbortSignal) => Promise<Reply>,
): Promise<Answered> {
  const answered = new AbortController();
  const withdraw = AbortSignal.any([signal, answered.signal]);
  const asked: Promise<Answered>[] = [
    queue.ask(principal, form, withdraw).then((reply) => ({ reply, by: 'dashboard' as const })),
  ];
  if (client) asked.push(client(withdraw).then((reply) => ({ reply, by: 'client' as const })));
  try {
    return await Promise.race(asked);
  } finally {
    answered.abort();
  }
}
