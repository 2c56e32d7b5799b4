// 2026-07-28 task status pushes over stdio: subscriptions/listen naming taskIds is acknowledged for
// the caller's own tasks that exist; each then gets notifications/tasks (the DetailedTask tasks/get
// would answer) on the listen, tagged with its id: its state at once, then each change, until it
// ends; a listen that follows only tasks then ends with its graceful result. Bounded per listen
// and per connection; a cancelled listen is told nothing more.
import { TaskStatusNotificationV2Schema } from '@modelcontextprotocol/ext-tasks/core/v2';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { appeared, processesWith, sleepMarker } from '../helpers/procs.js';
import { type RawServer, startRawServer } from '../helpers/raw.js';
import {
  listenRequest,
  type Message,
  ofListen,
  overStdio,
  pollUntilDone,
  type Send,
  SUBSCRIPTION_ID,
  toldStatuses,
  until,
} from '../helpers/tasks.js';

const MAX_TASK_IDS = 100;
const MAX_TASK_LISTENS = 16;
const APPROVE = { action: 'accept', content: { decision: 'approve' } };

/** Start a task running `code` (bash); its id. */
async function task(send: Send, code: string): Promise<string> {
  const created = await send('tools/call', { name: 'execute_code', arguments: { language: 'bash', code } });
  expect(created.result).toMatchObject({ resultType: 'task' });
  return created.result?.taskId as string;
}

/** Open listen `id` on `server`; its messages so far are read with ofListen. */
async function listen(
  server: RawServer,
  id: string,
  taskIds: unknown,
  options?: Parameters<typeof listenRequest>[2],
) {
  await server.write(`${JSON.stringify(listenRequest(id, taskIds, options))}\n`);
  await until(() => ofListen(server.received, id).length > 0, `listen ${id}'s first message`);
  return () => ofListen(server.received, id);
}

const ended = (messages: readonly Message[]) => messages.some((message) => message.result !== undefined);

describe('2026-07-28: subscriptions/listen for tasks (stdio)', () => {
  let server: RawServer;
  let send: Send;
  beforeAll(async () => {
    server = startRawServer();
    await server.discover();
    send = overStdio(server);
  });
  afterAll(() => server.close());

  it('acknowledges its own task (not an unknown id), pushes each status in order, then ends', async () => {
    const taskId = await task(send, 'echo listened; sleep 1; echo done');
    const messages = await listen(server, 'l-run', [taskId, 'no-such-task', taskId]);
    const [ack] = messages();
    expect(ack).toMatchObject({
      method: 'notifications/subscriptions/acknowledged',
      params: { notifications: { taskIds: [taskId] }, _meta: { [SUBSCRIPTION_ID]: 'l-run' } },
    });
    await until(() => ended(messages()), 'the listen to end');
    const told = messages().filter((message) => message.method === 'notifications/tasks');
    expect(toldStatuses(told)).toEqual(['working', 'completed']);
    for (const note of told)
      expect(TaskStatusNotificationV2Schema.safeParse({ jsonrpc: '2.0', ...note }).success).toBe(true);
    expect(told.at(-1)?.params).toMatchObject({
      taskId,
      status: 'completed',
      result: { structuredContent: { stdout: 'listened\ndone\n' } },
      _meta: { [SUBSCRIPTION_ID]: 'l-run' },
    });
    // The last message is the listen's graceful end, after the last status.
    expect(messages().at(-1)).toMatchObject({
      id: 'l-run',
      result: { resultType: 'complete', _meta: { [SUBSCRIPTION_ID]: 'l-run' } },
    });
    expect(messages().indexOf(told.at(-1) as Message)).toBeLessThan(messages().length - 1);
  });

  it('a task that has ended already: its final state, then the end', async () => {
    const taskId = await task(send, 'echo early');
    expect((await pollUntilDone(send, taskId)).result?.status).toBe('completed');
    const messages = await listen(server, 'l-ended', [taskId]);
    await until(() => ended(messages()), 'the listen to end');
    expect(toldStatuses(messages()).at(-1)).toBe('completed');
  });

  it('only unknown ids: none acknowledged and the listen ends at once, nothing pushed', async () => {
    const messages = await listen(server, 'l-none', ['a', 'b']);
    await until(() => ended(messages()), 'the listen to end');
    expect(messages()[0]?.params?.notifications).toEqual({ taskIds: [] });
    expect(toldStatuses(messages())).toEqual([]);
  });

  it('cancellation is pushed, and ends the listen', async () => {
    const marker = sleepMarker();
    const taskId = await task(send, `sleep ${marker}`);
    const messages = await listen(server, 'l-cancel', [taskId]);
    await until(() => toldStatuses(messages()).includes('working'), 'working');
    expect((await send('tasks/cancel', { taskId })).error).toBeUndefined();
    await until(() => ended(messages()), 'the listen to end');
    expect(toldStatuses(messages())).toEqual(['working', 'cancelled']);
  });

  it('a listen the client cancels is told nothing more', async () => {
    const marker = sleepMarker();
    const taskId = await task(send, `sleep ${marker}`);
    const messages = await listen(server, 'l-gone', [taskId]);
    await until(() => toldStatuses(messages()).includes('working'), 'working');
    await server.write(
      `${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 'l-gone' } })}\n`,
    );
    const later = await listen(server, 'l-after', [taskId]); // a second listen sees the cancel
    await until(() => toldStatuses(later()).includes('working'), 'working on the second listen');
    await send('tasks/cancel', { taskId });
    await until(() => ended(later()), 'the second listen to end');
    expect(toldStatuses(messages())).toEqual(['working']);
    expect(ended(messages())).toBe(false);
  });

  it('refuses a listen without the extension, with ids not strings, or with too many', async () => {
    const refused = async (id: string, taskIds: unknown, tasks = true) =>
      (await server.request(id, 'subscriptions/listen', listenRequest(id, taskIds, { tasks }).params)).error;
    expect(await refused('r-cap', ['x'], false)).toMatchObject({
      code: -32021,
      data: { requiredCapabilities: { extensions: { 'io.modelcontextprotocol/tasks': {} } } },
    });
    expect(await refused('r-shape', [1, 2])).toMatchObject({ code: -32602 });
    const many = Array.from({ length: MAX_TASK_IDS + 1 }, (_, index) => `t${index}`);
    expect(await refused('r-many', many)).toMatchObject({
      code: -32602,
      message: expect.stringContaining(`at most ${MAX_TASK_IDS} taskIds`),
    });
  });

  it(`at most ${MAX_TASK_LISTENS} listens for tasks open on a connection; a cancelled one frees its place`, async () => {
    const marker = sleepMarker();
    const taskId = await task(send, `sleep ${marker}`);
    const ids = Array.from({ length: MAX_TASK_LISTENS }, (_, index) => `l-bound-${index}`);
    for (const id of ids) await listen(server, id, [taskId]);
    const over = await server.request(
      'l-over',
      'subscriptions/listen',
      listenRequest('l-over', [taskId]).params,
    );
    expect(over.error).toMatchObject({
      code: -32603,
      message: expect.stringContaining('Subscription limit reached'),
    });
    await server.write(
      `${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: ids[0] } })}\n`,
    );
    const again = await listen(server, 'l-again', [taskId]);
    expect(again()[0]).toMatchObject({ params: { notifications: { taskIds: [taskId] } } });
    await send('tasks/cancel', { taskId });
    await until(
      () => ended(again()) && ids.slice(1).every((id) => ended(ofListen(server.received, id))),
      'every listen to end',
    );
  });

  it('keeps the core filter the SDK honours: a tasks listen with toolsListChanged stays open', async () => {
    const taskId = await task(send, 'echo core');
    const messages = await listen(server, 'l-core', [taskId], { filter: { toolsListChanged: true } });
    expect(messages()[0]?.params?.notifications).toEqual({ toolsListChanged: true, taskIds: [taskId] });
    await until(() => toldStatuses(messages()).includes('completed'), 'completed');
    expect(ended(messages())).toBe(false); // the tools part goes on
    await server.write(
      `${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 'l-core' } })}\n`,
    );
  });
});

describe('2026-07-28: an approval inside a task, pushed (stdio, CODEXEC_APPROVAL=ask)', () => {
  let server: RawServer;
  let send: Send;
  beforeAll(async () => {
    server = startRawServer({ CODEXEC_APPROVAL: 'ask', CODEXEC_APPROVAL_TIMEOUT_MS: '3000' });
    await server.discover();
    send = overStdio(server);
  });
  afterAll(() => server.close());

  it('input_required with its request, then working and completed once approved', async () => {
    const taskId = await task(send, 'echo approved');
    const messages = await listen(server, 'l-ask', [taskId]);
    await until(() => toldStatuses(messages()).includes('input_required'), 'input_required');
    const asking = messages().find((message) => message.params?.status === 'input_required');
    expect(asking?.params).toMatchObject({
      inputRequests: { approval: { method: 'elicitation/create', params: { mode: 'form' } } },
    });
    await send('tasks/update', { taskId, inputResponses: { approval: APPROVE } });
    await until(() => ended(messages()), 'the listen to end');
    const statuses = toldStatuses(messages());
    expect(statuses[0]).toBe('input_required');
    expect(statuses.at(-1)).toBe('completed');
    expect(statuses.slice(1, -1).every((status) => status === 'working')).toBe(true);
    expect(messages().find((message) => message.params?.status === 'completed')?.params).toMatchObject({
      result: { structuredContent: { stdout: 'approved\n' } },
    });
  });

  it('no answer in time: input_required, then completed with APPROVAL_DENIED', async () => {
    const taskId = await task(send, 'echo never');
    const messages = await listen(server, 'l-late', [taskId]);
    await until(() => ended(messages()), 'the listen to end');
    const statuses = toldStatuses(messages());
    expect(statuses[0]).toBe('input_required');
    expect(statuses.at(-1)).toBe('completed');
    expect(statuses.slice(1, -1).every((status) => status === 'working')).toBe(true);
    expect(messages().find((message) => message.params?.status === 'completed')?.params).toMatchObject({
      result: { isError: true, structuredContent: { code: 'APPROVAL_DENIED' } },
    });
  });
});

describe('2026-07-28: a client that goes away with a listen open (stdio)', () => {
  it('the server exits 0 within seconds, its task stopped (the transport closed: no result is owed)', async () => {
    const server = startRawServer();
    await server.discover();
    const send = overStdio(server);
    const marker = sleepMarker();
    const taskId = await task(send, `sleep ${marker}`);
    const messages = await listen(server, 'l-left', [taskId]);
    await until(() => toldStatuses(messages()).includes('working'), 'working');
    expect((await appeared(marker)).length).toBeGreaterThan(0);
    const started = Date.now();
    await server.close(); // stdin ends: the client is gone
    expect(await server.exited).toBe(0);
    expect(Date.now() - started).toBeLessThan(15_000);
    expect(processesWith(marker)).toEqual([]);
  });

  it('stopped by a signal: each open listen ends with its result', async () => {
    const server = startRawServer();
    await server.discover();
    const send = overStdio(server);
    const taskId = await task(send, `sleep ${sleepMarker()}`);
    const messages = await listen(server, 'l-stop', [taskId]);
    await until(() => toldStatuses(messages()).includes('working'), 'working');
    server.proc.kill('SIGTERM');
    expect(await server.exited).toBe(0);
    expect(messages().at(-1)).toMatchObject({ id: 'l-stop', result: { resultType: 'complete' } });
    await server.close();
  });
});
