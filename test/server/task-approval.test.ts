// Approval inside a task (the task waits in input_required). 2026-07-28: the
// call is answered at once with a task that asks the approval form (tasks/get's inputRequests);
// tasks/update answers it. Approved, the task completes with the run's result; refused (deny,
// decline, cancel, no answer in time), with the APPROVAL_DENIED result a plain call gets, nothing
// having run; tasks/cancel while it waits ends it. The audit reads as for a call asked directly.
// 2025-11-25 (stdio, the SDK client): the call is answered at once with the task, and the form is
// asked on tasks/result's stream, tagged with the task; its answer decides the run.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { type RawServer, startRawServer } from '../helpers/raw.js';
import { type ElicitParams, startServer, type TestServer } from '../helpers/server.js';
import { overStdio, pollFor, pollUntilDone, type Reply, type Send } from '../helpers/tasks.js';

const APPROVE = { action: 'accept', content: { decision: 'approve' } };

interface AuditEntry {
  tool: string;
  input_code: string;
  approved: boolean;
  approved_by: string | null;
  exit_code: number | null;
}

function audit(home: string): AuditEntry[] {
  const dir = join(home, 'logs');
  return readdirSync(dir)
    .filter((name) => /^audit-.*\.jsonl$/.test(name))
    .flatMap((name) => readFileSync(join(dir, name), 'utf8').trimEnd().split('\n'))
    .map((line) => JSON.parse(line) as AuditEntry);
}

const resultOf = (reply: Reply) =>
  reply.result?.result as { isError?: boolean; structuredContent: Record<string, unknown> } | undefined;

describe('approval inside a 2026-era task', () => {
  let server: RawServer;
  let send: Send;
  let sessionId: string;

  beforeAll(async () => {
    server = startRawServer({ CODEXEC_APPROVAL: 'ask', CODEXEC_APPROVAL_TIMEOUT_MS: '3000' });
    await server.discover();
    send = overStdio(server);
    const started = await send('tools/call', { name: 'start_session', arguments: { language: 'python' } });
    sessionId = (started.result?.structuredContent as { session_id?: string } | undefined)
      ?.session_id as string;
  });
  afterAll(() => server.close());

  /** execute_code in the session writing `file`: a task asking approval. */
  async function writing(file: string): Promise<string> {
    const code = `open(${JSON.stringify(file)}, 'w').write('ran')`;
    const created = await send('tools/call', {
      name: 'execute_code',
      arguments: { language: 'python', session_id: sessionId, code },
    });
    expect(created.result).toMatchObject({ resultType: 'task', status: 'input_required' });
    return created.result?.taskId as string;
  }
  const written = async (file: string) =>
    (await send('tools/call', { name: 'read_file', arguments: { session_id: sessionId, path: file } }))
      .result;

  it('approved through tasks/update: the run happens, the task completes with its result', async () => {
    const taskId = await writing('approved.txt');
    const asking = await send('tasks/get', { taskId });
    expect(asking.result?.statusMessage).toBe('execute_code waits for the answer to approval');
    expect(asking.result?.inputRequests).toMatchObject({
      approval: {
        method: 'elicitation/create',
        params: { mode: 'form', message: expect.stringContaining('open("approved.txt", \'w\')') },
      },
    });
    expect((await written('approved.txt'))?.isError).toBe(true); // waiting: nothing ran yet
    await send('tasks/update', { taskId, inputResponses: { approval: APPROVE } });
    const done = await pollUntilDone(send, taskId);
    expect(done.result?.status).toBe('completed');
    expect(resultOf(done)).toMatchObject({ structuredContent: { success: true, exit_code: 0 } });
    expect((await written('approved.txt'))?.structuredContent).toMatchObject({ content: 'ran' });
    expect(audit(server.home).filter((entry) => entry.input_code.includes('approved.txt'))).toMatchObject([
      { tool: 'execute_code', approved: true, approved_by: 'client', exit_code: 0 },
    ]);
  });

  for (const [how, answer] of [
    ['denied', { action: 'accept', content: { decision: 'deny' } }],
    ['declined', { action: 'decline' }],
  ] as const) {
    it(`${how}: the task completes with APPROVAL_DENIED, nothing ran`, async () => {
      const file = `${how}.txt`;
      const taskId = await writing(file);
      await send('tasks/update', { taskId, inputResponses: { approval: answer } });
      const done = await pollUntilDone(send, taskId);
      expect(done.result?.status).toBe('completed');
      expect(resultOf(done)).toMatchObject({
        isError: true,
        structuredContent: {
          success: false,
          code: 'APPROVAL_DENIED',
          error: expect.stringContaining('Nothing ran'),
        },
      });
      expect((await written(file))?.isError).toBe(true);
      expect(audit(server.home).filter((entry) => entry.input_code.includes(file))).toMatchObject([
        { approved: false, approved_by: null, exit_code: null },
      ]);
    });
  }

  it('no answer within CODEXEC_APPROVAL_TIMEOUT_MS: APPROVAL_DENIED, the request withdrawn', async () => {
    const taskId = await writing('late.txt');
    const done = await pollFor(send, taskId, (reply) => reply.result?.status === 'completed', 10_000);
    expect(resultOf(done)).toMatchObject({
      isError: true,
      structuredContent: {
        code: 'APPROVAL_DENIED',
        error: expect.stringContaining('no answer within 3000 ms'),
      },
    });
    // A late answer finds nothing outstanding: ignored.
    expect(
      (await send('tasks/update', { taskId, inputResponses: { approval: APPROVE } })).error,
    ).toBeUndefined();
    expect((await written('late.txt'))?.isError).toBe(true);
  });

  it('tasks/cancel while input_required: the task reads cancelled and nothing runs', async () => {
    const taskId = await writing('cancelled.txt');
    expect((await send('tasks/cancel', { taskId })).error).toBeUndefined();
    const cancelled = await send('tasks/get', { taskId });
    expect(cancelled.result).toMatchObject({ status: 'cancelled' });
    expect(cancelled.result?.inputRequests).toBeUndefined();
    await send('tasks/update', { taskId, inputResponses: { approval: APPROVE } });
    await new Promise((resolve) => setTimeout(resolve, 500)); // the time a wrong run is given to start
    expect((await send('tasks/get', { taskId })).result?.status).toBe('cancelled');
    expect((await written('cancelled.txt'))?.isError).toBe(true);
    expect(audit(server.home).filter((entry) => entry.input_code.includes('cancelled.txt'))).toMatchObject([
      { approved: false },
    ]);
  });

  it('approve_trust_session: the next run in that session starts working, unasked', async () => {
    const taskId = await writing('trusted-1.txt');
    await send('tasks/update', {
      taskId,
      inputResponses: { approval: { action: 'accept', content: { decision: 'approve_trust_session' } } },
    });
    expect((await pollUntilDone(send, taskId)).result?.status).toBe('completed');
    const next = await send('tools/call', {
      name: 'execute_code',
      arguments: { language: 'python', session_id: sessionId, code: 'print(2 + 2)' },
    });
    expect(next.result).toMatchObject({ resultType: 'task', status: 'working' });
    const done = await pollUntilDone(send, next.result?.taskId as string);
    expect(resultOf(done)).toMatchObject({ structuredContent: { stdout: '4\n' } });
    expect(audit(server.home).at(-1)).toMatchObject({ approved: true, approved_by: 'trusted_session' });
  });
});

describe('approval inside a 2025-era task (stdio)', () => {
  let server: TestServer;
  const asked: Array<ElicitParams & { _meta?: Record<string, unknown> }> = [];
  let answer: 'accept' | 'decline' | 'error' = 'accept';
  const loose = z.looseObject({});
  const request = (method: string, params: Record<string, unknown>) =>
    server.client.request({ method, params } as never, loose) as Promise<Record<string, unknown>>;

  beforeAll(async () => {
    server = await startServer({
      era: 'legacy',
      env: { CODEXEC_APPROVAL: 'ask', CODEXEC_APPROVAL_TIMEOUT_MS: '10000' },
      elicit: (params) => {
        asked.push(params);
        if (answer === 'error') throw new Error('the client fails to show the form');
        return answer === 'accept'
          ? { action: 'accept', content: { decision: 'approve' } }
          : { action: 'decline' };
      },
    });
  });
  afterAll(() => server.close());

  for (const [how, expected] of [
    ['approved', { isError: undefined, stdout: 'ran\n' }],
    ['declined', { isError: true, stdout: undefined }],
    // An error for an answer is a no at once, as in the 2026 era (not the approval timeout's).
    ['answered with an error', { isError: true, stdout: undefined }],
  ] as const) {
    it(`the call is answered with the task at once; tasks/result asks the form (${how})`, async () => {
      answer = how === 'approved' ? 'accept' : how === 'declined' ? 'decline' : 'error';
      const before = asked.length;
      const created = await request('tools/call', {
        name: 'execute_code',
        arguments: { language: 'bash', code: 'echo ran' },
        task: {},
      });
      const task = created.task as { taskId: string; status: string };
      // Nothing asked on the call: the question waits in the task.
      expect(asked.length).toBe(before);
      expect(['working', 'input_required']).toContain(task.status);
      const result = (await request('tasks/result', { taskId: task.taskId })) as {
        isError?: boolean;
        structuredContent: Record<string, unknown>;
      };
      expect(asked.length).toBe(before + 1);
      expect(asked.at(-1)?._meta?.['io.modelcontextprotocol/related-task']).toEqual({ taskId: task.taskId });
      expect(result.isError).toBe(expected.isError);
      if (expected.stdout) expect(result.structuredContent).toMatchObject({ success: true, stdout: 'ran\n' });
      else {
        expect(result.structuredContent).toMatchObject({ success: false, code: 'APPROVAL_DENIED' });
        expect(result.structuredContent.error).not.toMatch(/no answer within/);
      }
    }, 60_000);
  }
});
