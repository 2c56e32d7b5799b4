// The dashboard's approval queue on its own (src/server/approval-queue.ts): an answer, the
// timeout, a withdrawal, and who may see and decide what; every change told to its watchers.
import { describe, expect, it } from 'vitest';
import { type ApprovalEvent, ApprovalQueue } from '../../src/server/index.js';

const form = (code: string) => ({
  tool: 'execute_code',
  language: 'python',
  sessionId: null,
  code,
  reason: 'ask',
});

describe('ApprovalQueue', () => {
  it('waits for a decision; another principal neither sees nor decides it, an admin does', async () => {
    const queue = new ApprovalQueue(10_000);
    const alices: ApprovalEvent[] = [];
    const bobs: ApprovalEvent[] = [];
    queue.watch('alice', (event) => alices.push(event));
    queue.watch('bob', (event) => bobs.push(event));
    const reply = queue.ask('alice', form('print(1)'), new AbortController().signal);
    const [waiting] = queue.list('alice');
    expect(waiting).toMatchObject({ principal: 'alice', code: 'print(1)', code_chars: 8 });
    expect(queue.list('bob')).toEqual([]);
    expect(() => queue.decide(waiting?.id ?? '', 'approve', 'bob')).toThrow(/no approval .* is waiting/);
    queue.decide(waiting?.id ?? '', 'approve_trust_session', undefined); // an admin
    expect(await reply).toEqual({ kind: 'decided', decision: 'approve_trust_session' });
    expect(queue.list(undefined)).toEqual([]);
    expect(alices.map((event) => event.type)).toEqual(['approval', 'approval_gone']);
    expect(bobs).toEqual([]);
    expect(() => queue.decide(waiting?.id ?? '', 'deny', 'alice')).toThrow(/no approval/);
  });

  it('deny refuses; no answer in time refuses naming the setting; a withdrawal refuses and tells', async () => {
    const queue = new ApprovalQueue(300);
    const events: ApprovalEvent[] = [];
    queue.watch(undefined, (event) => events.push(event));
    const denied = queue.ask('alice', form('a'), new AbortController().signal);
    queue.decide(queue.list('alice')[0]?.id ?? '', 'deny', 'alice');
    expect(await denied).toEqual({ kind: 'refused', why: 'denied from the dashboard' });
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
    const queue = new ApprovalQueue(10_000);
    const call = new AbortController();
    void queue.ask('alice', form('x'.repeat(20_000)), call.signal);
    expect(queue.list('alice')[0]).toMatchObject({ code: 'x'.repeat(8000), code_chars: 20_000 });
    call.abort();
  });
});
