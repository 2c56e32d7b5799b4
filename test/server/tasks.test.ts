// MCP Tasks (long work that outlives a call and may ask for input) over stdio, the 2026-07-28 extension (raw
// JSON-RPC: the SDK client rejects its handles) and the 2025-11-25 tasks (the SDK client): a call
// that asks is answered at once with a task; tasks/get shows the output so far, then the very
// result the call would have had; tasks/cancel kills the run; a task left working by a killed
// server reads failed "server restarted" with its partial output; expired tasks go.
import { rmSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { appeared, processesWith, sleepMarker } from '../helpers/procs.js';
import { type RawServer, startRawServer } from '../helpers/raw.js';
import { callTool, startServer, type TestServer, tempDir } from '../helpers/server.js';
import {
  envelope,
  OUTPUT_META,
  overStdio,
  pollFor,
  pollUntilDone,
  type Reply,
  type Send,
} from '../helpers/tasks.js';

const outputOf = (reply: Reply) =>
  ((reply.result?._meta as Record<string, unknown> | undefined)?.[OUTPUT_META] as string | undefined) ?? '';

async function gone(marker: string, ms = 15_000): Promise<number[]> {
  const until = Date.now() + ms;
  let left = processesWith(marker);
  while (left.length > 0 && Date.now() < until) {
    await new Promise((resolve) => setTimeout(resolve, 100));
    left = processesWith(marker);
  }
  return left;
}

describe('MCP Tasks over stdio (2026-07-28)', () => {
  let server: RawServer;
  let send: Send;

  beforeAll(async () => {
    server = startRawServer();
    await server.discover();
    send = overStdio(server);
  });
  afterAll(() => server.close());

  it('advertises the extension on server/discover', async () => {
    const reply = await send('server/discover', {});
    expect(reply.result?.capabilities).toMatchObject({ extensions: { 'io.modelcontextprotocol/tasks': {} } });
  });

  it('sends each poll only the output that came since the last, and its last line as the status', async () => {
    const code = 'echo one; sleep 0.6; echo two; sleep 0.6; echo three; sleep 0.6';
    const created = await send('tools/call', { name: 'execute_code', arguments: { language: 'bash', code } });
    const taskId = created.result?.taskId as string;
    const sent: string[] = [];
    for (;;) {
      const reply = await send('tasks/get', { taskId });
      if (reply.result?.status !== 'working') break;
      sent.push(outputOf(reply));
      expect(['execute_code is running', 'one', 'two', 'three']).toContain(reply.result?.statusMessage);
      await new Promise((resolve) => setTimeout(resolve, 50)); // a client's poll interval
    }
    // Each line went out once: no poll sent again what an earlier one had (the secrets filter may
    // still hold the last character while the run goes on).
    expect(sent.join('')).toMatch(/^one\ntwo\nthree\n?$/);
    expect(sent.filter((part) => part !== '').length).toBeGreaterThan(1);
  });

  it('answers at once with a task, shows the output so far, then the result a plain call returns', async () => {
    const code = 'echo first; sleep 2; echo done';
    const created = await send('tools/call', { name: 'execute_code', arguments: { language: 'bash', code } });
    // Answered before the run's end (2 s), however busy the machine: the task is still working.
    expect(created.result).toMatchObject({ resultType: 'task', status: 'working', ttlMs: 3_600_000 });
    const taskId = created.result?.taskId as string;
    expect(taskId).toMatch(/^[0-9a-f-]{36}$/);

    const working = await pollFor(send, taskId, (reply) => outputOf(reply).includes('first'));
    expect(working.result).toMatchObject({ status: 'working', resultType: 'complete' });
    expect(outputOf(working)).not.toContain('done');

    const done = await pollUntilDone(send, taskId);
    expect(done.result?.status).toBe('completed');
    const result = done.result?.result as { structuredContent: Record<string, unknown>; content: unknown[] };
    expect(result.structuredContent).toMatchObject({ success: true, stdout: 'first\ndone\n', exit_code: 0 });
    const facts = { execution_id: result.structuredContent.execution_id, exit_code: 0 };
    expect(result.content[0]).toEqual({ type: 'text', text: `${JSON.stringify(facts)}\nfirst\ndone\n` });

    // Without the extension the same call answers with its result, of the same shape.
    const plain = await send(
      'tools/call',
      { name: 'execute_code', arguments: { language: 'bash', code } },
      false,
    );
    expect(plain.result?.resultType).toBe('complete');
    const value = plain.result?.structuredContent as Record<string, unknown>;
    expect(Object.keys(result.structuredContent).sort()).toEqual(Object.keys(value).sort());
  });

  it('execute_command, send_to_session and run_script become tasks too', async () => {
    const command = await send('tools/call', {
      name: 'execute_command',
      arguments: { command: 'echo from-command' },
    });
    expect(command.result?.resultType).toBe('task');
    const done = await pollUntilDone(send, command.result?.taskId as string);
    expect(done.result?.result).toMatchObject({ structuredContent: { stdout: 'from-command\n' } });

    const session = await send('tools/call', { name: 'start_session', arguments: { language: 'python' } });
    expect(session.result?.resultType).toBe('complete'); // not a task-capable tool
    const sessionId = (session.result?.structuredContent as { session_id?: string } | undefined)?.session_id;
    const sent = await send('tools/call', {
      name: 'send_to_session',
      arguments: { session_id: sessionId, code: 'print(6 * 7)' },
    });
    expect(sent.result?.resultType).toBe('task');
    const answered = await pollUntilDone(send, sent.result?.taskId as string);
    expect(answered.result?.result).toMatchObject({ structuredContent: { stdout: '42\n' } });

    const saved = await send('tools/call', {
      name: 'save_script',
      arguments: { name: 'greet', description: 'says hello', language: 'bash', code: 'echo "hello $1"' },
    });
    expect(saved.result?.isError).not.toBe(true);
    const run = await send('tools/call', {
      name: 'run_script',
      arguments: { name: 'greet', args: ['tasks'] },
    });
    expect(run.result?.resultType).toBe('task');
    const ran = await pollUntilDone(send, run.result?.taskId as string);
    expect(ran.result?.result).toMatchObject({ structuredContent: { stdout: 'hello tasks\n' } });
  });

  it('a refusal before the run is answered at once, not as a task', async () => {
    const created = await send('tools/call', {
      name: 'send_to_session',
      arguments: { session_id: 'sess_000000000000', code: 'print(1)' },
    });
    expect(created.result).toMatchObject({ isError: true, resultType: 'complete' });
  });

  it('tasks/cancel kills the run and the task reads cancelled', async () => {
    const marker = sleepMarker();
    const created = await send('tools/call', {
      name: 'execute_code',
      arguments: { language: 'bash', code: `echo started; sleep ${marker}` },
    });
    const taskId = created.result?.taskId as string;
    await pollFor(send, taskId, (reply) => outputOf(reply).includes('started'));
    expect((await appeared(marker)).length).toBeGreaterThan(0);
    expect((await send('tasks/cancel', { taskId })).result).toMatchObject({ resultType: 'complete' });
    const cancelled = await send('tasks/get', { taskId });
    expect(cancelled.result).toMatchObject({ status: 'cancelled' });
    expect(outputOf(cancelled)).toContain('started');
    expect(await gone(marker)).toEqual([]);
    // The run's own end, after the cancel, leaves the task cancelled: the run says nothing when it
    // has ended, so this pause is the time a wrong change of status is given to show.
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect((await send('tasks/get', { taskId })).result?.status).toBe('cancelled');
  });

  it('refuses tasks/get from a client that did not declare the extension, and unknown tasks', async () => {
    const undeclared = await send('tasks/get', { taskId: 'whatever' }, false);
    expect(undeclared.error?.code).toBe(-32021);
    const unknown = await send('tasks/get', { taskId: 'no-such-task' });
    expect(unknown.error).toMatchObject({ code: -32602, message: expect.stringContaining('not found') });
    expect((await send('tasks/cancel', { taskId: 'no-such-task' })).error?.code).toBe(-32602);
  });
});

describe('MCP Tasks over stdio (2025-11-25, the SDK client)', () => {
  let server: TestServer;
  const loose = z.looseObject({});
  const request = (method: string, params: Record<string, unknown>) =>
    server.client.request({ method, params } as never, loose) as Promise<Record<string, unknown>>;

  beforeAll(async () => {
    server = await startServer({ era: 'legacy' });
  });
  afterAll(() => server.close());

  it('declares tasks, marks the task-capable tools, and answers a task request at once', async () => {
    expect(server.client.getServerCapabilities()?.tasks).toEqual({
      list: {},
      cancel: {},
      requests: { tools: { call: {} } },
    });
    const { tools } = await server.client.listTools();
    const support = Object.fromEntries(tools.map((tool) => [tool.name, tool.execution?.taskSupport]));
    expect(support).toMatchObject({
      execute_code: 'optional',
      execute_command: 'optional',
      send_to_session: 'optional',
      run_script: 'optional',
      install_package: 'optional',
      start_session: undefined,
    });

    // The run waits (on a sleep the test ends) until the test has seen it working: the answer
    // comes at once, while the run cannot have ended, however slow the machine.
    const marker = sleepMarker();
    const created = await request('tools/call', {
      name: 'execute_code',
      arguments: { language: 'bash', code: `echo first; sleep ${marker}; echo done` },
      task: { ttl: 60_000 },
    });
    expect(created.task).toMatchObject({ status: 'working', ttl: 3_600_000, pollInterval: 500 });
    const taskId = (created.task as { taskId: string }).taskId;

    const until = Date.now() + 15_000;
    let working = await request('tasks/get', { taskId });
    while (!String(working.statusMessage).includes('first') && Date.now() < until) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      working = await request('tasks/get', { taskId });
    }
    expect(working).toMatchObject({
      taskId,
      status: 'working',
      statusMessage: expect.stringContaining('first'),
    });
    const listed = await request('tasks/list', {});
    expect((listed.tasks as Array<{ taskId: string }>).map((task) => task.taskId)).toContain(taskId);

    // tasks/result waits for the end, then answers what the call would have.
    const result = request('tasks/result', { taskId });
    for (const pid of await appeared(marker)) process.kill(pid, 'SIGTERM');
    expect(await result).toMatchObject({
      structuredContent: { success: true, stdout: 'first\ndone\n' },
      _meta: { 'io.modelcontextprotocol/related-task': { taskId } },
    });
    expect(await request('tasks/get', { taskId })).toMatchObject({ status: 'completed' });
  });

  it('tasks/cancel kills the run and answers the cancelled task; a second cancel is refused', async () => {
    const marker = sleepMarker();
    const created = await request('tools/call', {
      name: 'execute_command',
      arguments: { command: `echo started; sleep ${marker}` },
      task: {},
    });
    const taskId = (created.task as { taskId: string }).taskId;
    expect((await appeared(marker)).length).toBeGreaterThan(0);
    expect(await request('tasks/cancel', { taskId })).toMatchObject({ taskId, status: 'cancelled' });
    expect(await gone(marker)).toEqual([]);
    await expect(request('tasks/cancel', { taskId })).rejects.toMatchObject({ code: -32602 });
    await expect(request('tasks/result', { taskId })).rejects.toThrow(/cancelled/);
  });

  it('tells the client each later status of a task (notifications/tasks/status)', async () => {
    const statuses: Array<{ taskId: string; status: string }> = [];
    // (a spec notification the client SDK's types leave out of its method list)
    server.client.setNotificationHandler(
      'notifications/tasks/status' as never,
      (notification: { params: unknown }) => {
        statuses.push(notification.params as { taskId: string; status: string });
      },
    );
    const marker = sleepMarker();
    const created = await request('tools/call', {
      name: 'execute_command',
      arguments: { command: `sleep ${marker}; echo ended` },
      task: {},
    });
    const taskId = (created.task as { taskId: string }).taskId;
    expect((await appeared(marker)).length).toBeGreaterThan(0);
    expect(statuses.filter((told) => told.taskId === taskId)).toEqual([]); // still working: nothing new
    for (const pid of await appeared(marker)) process.kill(pid, 'SIGTERM');
    const until = Date.now() + 15_000;
    while (!statuses.some((told) => told.taskId === taskId) && Date.now() < until)
      await new Promise((resolve) => setTimeout(resolve, 100));
    const told = statuses.filter((status) => status.taskId === taskId);
    expect(told).toHaveLength(1);
    expect(told[0]).toMatchObject({
      taskId,
      status: 'completed',
      ttl: expect.any(Number),
      pollInterval: 500,
    });
    expect(await request('tasks/get', { taskId })).toMatchObject({ status: 'completed' });
  });

  it('a call without `task` answers as before', async () => {
    const plain = await callTool(server.client, 'execute_code', { language: 'bash', code: 'echo plain' });
    expect(plain.value).toMatchObject({ success: true, stdout: 'plain\n' });
  });
});

describe('MCP Tasks across a server restart', () => {
  const home = tempDir();
  const marker = sleepMarker();
  afterAll(() => {
    // What the killed server left (its sandbox dies with it; this is a backstop).
    for (const pid of processesWith(marker)) process.kill(pid, 'SIGKILL');
    rmSync(home, { recursive: true, force: true });
  });

  it('an unfinished task reads failed "server restarted" with its partial output', async () => {
    const first = startRawServer({ CODEXEC_HOME: home });
    await first.discover();
    const send = overStdio(first);
    const created = await send('tools/call', {
      name: 'execute_code',
      arguments: { language: 'bash', code: `echo partial; sleep ${marker}` },
    });
    const taskId = created.result?.taskId as string;
    await pollFor(send, taskId, (reply) => outputOf(reply).includes('partial'));
    first.proc.kill('SIGKILL');
    await first.exited;
    await first.close();

    const second = startRawServer({ CODEXEC_HOME: home });
    try {
      await second.discover();
      const reply = await overStdio(second)('tasks/get', { taskId });
      expect(reply.result).toMatchObject({
        status: 'failed',
        statusMessage: 'server restarted',
        error: { code: -32603, message: 'server restarted' },
      });
      expect(outputOf(reply)).toContain('partial');
      expect(reply.result?.error).toMatchObject({ data: { output: expect.stringContaining('partial') } });
    } finally {
      await second.close();
    }
  });
});

describe('MCP Tasks across a shutdown', () => {
  const home = tempDir();
  afterAll(() => rmSync(home, { recursive: true, force: true }));

  it('a task running when the server shuts down reads failed "server shut down", its run gone', async () => {
    const marker = sleepMarker();
    const first = startRawServer({ CODEXEC_HOME: home });
    await first.discover();
    const created = await overStdio(first)('tools/call', {
      name: 'execute_code',
      arguments: { language: 'bash', code: `echo before-shutdown; sleep ${marker}` },
    });
    const taskId = created.result?.taskId as string;
    await pollFor(overStdio(first), taskId, (reply) => outputOf(reply).includes('before-shutdown'));
    await first.close(); // stdin closed: the server shuts down
    expect(await first.exited).toBe(0);
    expect(processesWith(marker)).toEqual([]);

    const second = startRawServer({ CODEXEC_HOME: home });
    try {
      await second.discover();
      const reply = await overStdio(second)('tasks/get', { taskId });
      expect(reply.result).toMatchObject({ status: 'failed', error: { message: 'server shut down' } });
      expect(outputOf(reply)).toContain('before-shutdown');
    } finally {
      await second.close();
    }
  });
});

describe('MCP Tasks under CODEXEC_APPROVAL=ask', () => {
  it('a call declaring the extension becomes a task at once, asking approval inside it (input_required)', async () => {
    const server = startRawServer({ CODEXEC_APPROVAL: 'ask' });
    try {
      await server.discover();
      const send = overStdio(server);
      const call = { name: 'execute_code', arguments: { language: 'bash', code: 'echo approved-run' } };
      const created = await send('tools/call', call);
      expect(created.result).toMatchObject({ resultType: 'task', status: 'input_required' });
      const taskId = created.result?.taskId as string;
      const asking = await send('tasks/get', { taskId });
      expect(asking.result).toMatchObject({ status: 'input_required' });
      expect(asking.result?.inputRequests).toMatchObject({
        approval: { method: 'elicitation/create', params: { mode: 'form' } },
      });
      expect(
        (
          await send('tasks/update', {
            taskId,
            inputResponses: { approval: { action: 'accept', content: { decision: 'approve' } } },
          })
        ).result,
      ).toMatchObject({});
      const done = await pollUntilDone(send, taskId);
      expect(done.result?.result).toMatchObject({ structuredContent: { stdout: 'approved-run\n' } });
    } finally {
      await server.close();
    }
  });

  it('a retry carrying an MRTR answer is read on the call, as before, and the approved run becomes the task', async () => {
    const server = startRawServer({ CODEXEC_APPROVAL: 'ask' });
    try {
      await server.discover();
      const send = overStdio(server);
      const call = { name: 'execute_code', arguments: { language: 'bash', code: 'echo approved-run' } };
      // Without the extension the call itself asks (input_required), as every 2026-era call did.
      const elicitationOnly = {
        ...envelope(false),
        'io.modelcontextprotocol/clientCapabilities': { elicitation: { form: {} } },
      };
      const asked = (await server.request('mrtr-ask', 'tools/call', {
        ...call,
        _meta: elicitationOnly,
      })) as Reply;
      expect(asked.result).toMatchObject({ resultType: 'input_required' });
      expect(asked.result?.inputRequests).toMatchObject({ approval: { method: 'elicitation/create' } });
      const created = await send('tools/call', {
        ...call,
        inputResponses: { approval: { action: 'accept', content: { decision: 'approve' } } },
        requestState: asked.result?.requestState,
      });
      expect(created.result).toMatchObject({ resultType: 'task', status: 'working' });
      const done = await pollUntilDone(send, created.result?.taskId as string);
      expect(done.result?.result).toMatchObject({ structuredContent: { stdout: 'approved-run\n' } });

      // A ticket answers once: the deny needs a question of its own.
      const again = (await server.request('mrtr-ask-again', 'tools/call', {
        ...call,
        _meta: elicitationOnly,
      })) as Reply;
      expect(again.result).toMatchObject({ resultType: 'input_required' });
      const denied = await send('tools/call', {
        ...call,
        inputResponses: { approval: { action: 'accept', content: { decision: 'deny' } } },
        requestState: again.result?.requestState,
      });
      // A refusal read on the call is the call's answer, never a task.
      expect(denied.result).toMatchObject({ resultType: 'complete', isError: true });
      expect(denied.result?.structuredContent).toMatchObject({ code: 'APPROVAL_DENIED' });
    } finally {
      await server.close();
    }
  });
});

describe('MCP Tasks TTL (CODEXEC_TASK_TTL_MS)', () => {
  it('a finished task is gone once its TTL has passed', async () => {
    // Long enough for a busy machine to see the task completed before it expires.
    const server = startRawServer({ CODEXEC_TASK_TTL_MS: '5000' });
    try {
      await server.discover();
      const send = overStdio(server);
      const created = await send('tools/call', {
        name: 'execute_code',
        arguments: { language: 'bash', code: 'echo hi' },
      });
      expect(created.result?.ttlMs).toBe(5000);
      const taskId = created.result?.taskId as string;
      expect((await pollUntilDone(send, taskId)).result?.status).toBe('completed');
      // Gone once its TTL has passed: polled, as the sweep runs on its own schedule.
      await expect
        .poll(async () => (await send('tasks/get', { taskId })).error?.code, {
          timeout: 15_000,
          interval: 200,
        })
        .toBe(-32602);
    } finally {
      await server.close();
    }
  });
});
