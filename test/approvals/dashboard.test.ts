// The dashboard's approval queue on its own (src/approvals/dashboard.ts): an answer, the
// timeout, a withdrawal, and who may see and decide what; every change told to its watchers.
import { describe, expect, it } from 'vitest';
import { type ApprovalEvent, ApprovalQueue } from '../../src/approvals/index.js';

const form = (code: string) =>
  ({
    kind: 'run',
    form: {
      tool: 'execute_code',
      language: 'python',
      sessionId: null,
      code,
      reason: 'ask',
      trustScope: 'principal',
    },
  }) as const;

describe('ApprovalQueue', () => {
  it('waits for a decision; another principal neither sees nor decides it, an approver decides it', async () => {
    const queue = new ApprovalQueue(10_000, ['dave', 'erin']);
    const alices: ApprovalEvent[] = [];
    const bobs: ApprovalEvent[] = [];
    queue.watch('alice', (event) => alices.push(event));
    queue.watch('bob', (event) => bobs.push(event));
    const reply = queue.ask('alice', form('print(1)'), new AbortController().signal);
    const [waiting] = queue.list('alice');
    const id = waiting?.id ?? '';
    expect(waiting).toMatchObject({ principal: 'alice', kind: 'run', code: 'print(1)', code_chars: 8 });
    expect(queue.list('bob')).toEqual([]);
    // Not an approver: refused whatever the id, its own call's included.
    expect(() => queue.decide(id, 'approve', 'bob')).toThrow(/CODEXEC_HTTP_APPROVERS/);
    expect(() => queue.decide(id, 'approve', 'alice')).toThrow(/CODEXEC_HTTP_APPROVERS/);
    expect(() => queue.decide('no-such-id', 'approve', 'bob')).toThrow(/CODEXEC_HTTP_APPROVERS/);
    expect(queue.list('alice')).toHaveLength(1);
    queue.decide(id, 'approve_trust_session', 'dave');
    expect(await reply).toEqual({ kind: 'decided', decision: 'approve_trust_session', decider: 'dave' });
    expect(queue.list(undefined)).toEqual([]);
    expect(alices.map((event) => event.type)).toEqual(['approval', 'approval_gone']);
    expect(bobs).toEqual([]);
    expect(() => queue.decide(id, 'deny', 'dave')).toThrow(/no approval/);
  });

  it("an approver's own call waits for another approver", async () => {
    const queue = new ApprovalQueue(10_000, ['dave', 'erin']);
    const reply = queue.ask('dave', form('print(2)'), new AbortController().signal);
    const id = queue.list('dave')[0]?.id ?? '';
    for (const decision of ['approve', 'approve_trust_session', 'deny'] as const)
      expect(() => queue.decide(id, decision, 'dave')).toThrow(
        expect.objectContaining({ code: 'FORBIDDEN', message: expect.stringContaining('whose call waits') }),
      );
    expect(queue.list(undefined)).toHaveLength(1);
    queue.decide(id, 'deny', 'erin');
    expect(await reply).toEqual({
      kind: 'refused',
      why: 'denied from the dashboard by erin',
      decider: 'erin',
    });
  });

  it('shows a host question as its target', () => {
    const queue = new ApprovalQueue(10_000, []);
    const call = new AbortController();
    const host = {
      tool: 'execute_code',
      sessionId: 's1',
      host: 'example.com',
      port: 443,
      trustScope: 'principal' as const,
    };
    void queue.ask('alice', { kind: 'host', form: host }, call.signal);
    expect(queue.list('alice')[0]).toMatchObject({
      kind: 'host',
      host: 'example.com',
      port: 443,
      session_id: 's1',
      language: null,
      code: '',
    });
    call.abort();
  });

  it('deny refuses; no answer in time refuses naming the setting; a withdrawal refuses and tells', async () => {
    const queue = new ApprovalQueue(300, ['dave']);
    const events: ApprovalEvent[] = [];
    queue.watch(undefined, (event) => events.push(event));
    const denied = queue.ask('alice', form('a'), new AbortController().signal);
    queue.decide(queue.list('alice')[0]?.id ?? '', 'deny', 'dave');
    expect(await denied).toMatchObject({ kind: 'refused', why: 'denied from the dashboard by dave' });
    const started = Date.now();
    const late = await queue.ask('alice', form('b'), new AbortController().signal);
    expect(late).toEqual({ kind: 'refused', why: expect.stringContaining('CODEXEC_APPROVAL_TIMEOUT_MS') });
    expect(Date.now() - started).toBeGreaterThanOrEqual(290);
    const call = new AbortController();
    const withdrawn = queue.ask('alice', form('c'), call.signal);
    call.abort();
    expect(await withdrawn).toMatchObject({ kind: 'refused', why: expect.stringContaining('withdrawn') });
    expect(queue.list(undefined)).toEqual([]);
    expect(events.filter((event) => event.type === 'approval_gone').map((event) => event.outcome)).toEqual([
      'denied',
      'timed_out',
      'withdrawn',
    ]);
  });

  it('bounds the code shown, keeping its length', () => {
    const queue = new ApprovalQueue(10_000, []);
    const call = new AbortController();
    void queue.ask('alice', form('x'.repeat(20_000)), call.signal);
    expect(queue.list('alice')[0]).toMatchObject({ code: 'x'.repeat(8000), code_chars: 20_000 });
    call.abort();
  });
});
