// The approval flow on its own (src/approvals/flow.ts), with the dashboard as the approver: ask →
// route → decide → audit, in process. Who decides is named in the audit, never the one whose
// call waits; refusals before anybody is asked are audited too; trust stops the asking.
import type { ServerContext } from '@modelcontextprotocol/server';
import { describe, expect, it } from 'vitest';
import {
  type ApprovalAsker,
  type ApprovalEvent,
  ApprovalQueue,
  Approvals,
  type Asked,
  type Attempt,
  PendingApprovals,
} from '../../src/approvals/index.js';
import { NO_METRICS } from '../../src/metrics/index.js';
import type { AuditAttempt } from '../../src/policy/index.js';
import { asPrincipal, LOCAL_PRINCIPAL } from '../../src/util/index.js';

/** A client that cannot be asked: under CODEXEC_APPROVER=dashboard it never is anyway. */
const noClient = {
  channel: () => ({ kind: 'none', why: 'the client cannot show an approval form' }),
  modernRequest: () => false,
  carriesAnswer: () => false,
  currentTask: () => undefined,
} as unknown as ApprovalAsker;

const ctx = { mcpReq: { signal: new AbortController().signal } } as unknown as ServerContext;
const attempt: Attempt = { tool: 'execute_code', language: 'python', code: 'print(1)', sessionId: null };
const why = { reason: 'every run asks (CODEXEC_APPROVAL=ask)', rule: null };

function setup(options: { approver?: 'client' | 'dashboard'; perPrincipal?: number } = {}) {
  const entries: AuditAttempt[] = [];
  const queue = new ApprovalQueue(10_000, ['dave', 'alice']);
  const trusted = new Set<string>();
  const approvals = new Approvals({
    asker: noClient,
    approver: options.approver ?? 'dashboard',
    dashboard: queue,
    pending: new PendingApprovals(10, options.perPrincipal ?? 10),
    metrics: NO_METRICS,
    audit: { record: async (entry) => void entries.push(entry) },
    trusted,
    trustScope: 'principal',
  });
  /** The next card the page is shown. */
  const shown = () =>
    new Promise<string>((resolve) => {
      const stop = queue.watch(undefined, (event: ApprovalEvent) => {
        if (event.type !== 'approval') return;
        stop();
        resolve(event.approval.id);
      });
    });
  return { approvals, queue, entries, trusted, shown };
}

const asked = (outcome: Asked) => {
  if (outcome.kind !== 'asked') throw new Error(`expected a question, got ${outcome.kind}`);
  return outcome;
};

describe('Approvals', () => {
  it('approved from the page: who decided is the approval, and the trust is kept', async () => {
    const { approvals, queue, trusted, shown } = setup();
    const card = shown();
    const question = asked(await asPrincipal('alice', () => approvals.ask(ctx, attempt, why)));
    const answered = asPrincipal('alice', () => question.answer(new AbortController().signal));
    const id = await card;
    // The one whose call waits may be an approver, yet never decides it.
    expect(() => queue.decide(id, 'approve', 'alice')).toThrow(/whose call waits/);
    queue.decide(id, 'approve_trust_session', 'dave');
    expect(await answered).toEqual({
      kind: 'approved',
      approval: { approved_by: 'dashboard', decided_by: 'dave' },
    });
    expect([...trusted]).toEqual(['execute_code:python']);
    expect(await approvals.ask(ctx, attempt, why)).toEqual({
      kind: 'trusted',
      approval: { approved_by: 'trusted_session' },
    });
  });

  it('denied from the page: APPROVAL_DENIED after an audit entry naming the decider', async () => {
    const { approvals, queue, entries, trusted, shown } = setup();
    const card = shown();
    const question = asked(await asPrincipal('alice', () => approvals.ask(ctx, attempt, why)));
    const answered = asPrincipal('alice', () => question.answer(new AbortController().signal));
    queue.decide(await card, 'deny', 'dave');
    await expect(answered).rejects.toMatchObject({ code: 'APPROVAL_DENIED' });
    expect(entries).toHaveLength(1);
    expect(entries[0]).toMatchObject({
      approved: false,
      approved_by: null,
      decided_by: 'dave',
      principal: 'alice',
      input_code: 'print(1)',
    });
    expect(trusted.size).toBe(0);
  });

  it('nobody to ask: APPROVAL_UNAVAILABLE, audited, and no place taken', async () => {
    const { approvals, entries } = setup({ approver: 'client' });
    await expect(approvals.ask(ctx, attempt, why)).rejects.toMatchObject({ code: 'APPROVAL_UNAVAILABLE' });
    expect(entries).toMatchObject([{ approved: false, approved_by: null, rule: null }]);
  });

  it("past a principal's share of pending approvals: LIMIT_REACHED, audited; the local principal has no share", async () => {
    const { approvals, entries } = setup({ perPrincipal: 1 });
    await asPrincipal('alice', () => approvals.ask(ctx, attempt, why));
    await expect(asPrincipal('alice', () => approvals.ask(ctx, attempt, why))).rejects.toMatchObject({
      code: 'LIMIT_REACHED',
    });
    expect(entries).toMatchObject([{ approved: false, principal: 'alice' }]);
    await asPrincipal(LOCAL_PRINCIPAL, () => approvals.ask(ctx, attempt, why));
    expect(asked(await asPrincipal(LOCAL_PRINCIPAL, () => approvals.ask(ctx, attempt, why))).kind).toBe(
      'asked',
    );
  });
});
