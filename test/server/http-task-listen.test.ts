// 2026-07-28 task status pushes over serve --http: a listen naming taskIds is the POST's SSE stream;
// it acknowledges the principal's own tasks only (another's task reads as unknown, and that listen
// ends at once, told nothing), carries notifications/tasks as their status changes (an approval's
// input_required, a cancellation), and ends with its graceful result once they have ended. A
// client that goes away mid-stream leaves nothing behind: its place under the bound is free again.
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { TaskStatusNotificationV2Schema } from '@modelcontextprotocol/ext-tasks/core/v2';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type HttpServer, startHttp } from '../helpers/http.js';
import { sleepMarker } from '../helpers/procs.js';
import { tempDir } from '../helpers/server.js';
import {
  envelope,
  listenOverHttp,
  listenRequest,
  overHttp,
  type Send,
  SUBSCRIPTION_ID,
  toldStatuses,
  until,
} from '../helpers/tasks.js';

const ALICE = 'alice-token-0123456789';
const BOB = 'bob-token-0123456789ab';
const MAX_TASK_LISTENS = 16;
const APPROVE = { action: 'accept', content: { decision: 'approve' } };

async function task(send: Send, code: string): Promise<string> {
  const created = await send('tools/call', { name: 'execute_code', arguments: { language: 'bash', code } });
  expect(created.result).toMatchObject({ resultType: 'task' });
  return created.result?.taskId as string;
}

function withTokens(env: Record<string, string> = {}) {
  let dir = '';
  let server: HttpServer | undefined;
  beforeAll(async () => {
    dir = tempDir();
    const tokens = join(dir, 'tokens.json');
    writeFileSync(tokens, JSON.stringify({ alice: ALICE, bob: BOB }));
    server = await startHttp({ env: { CODEXEC_HTTP_TOKENS: tokens, ...env } });
  });
  afterAll(async () => {
    await server?.stop();
    rmSync(dir, { recursive: true, force: true });
    if (server) rmSync(server.home, { recursive: true, force: true });
  });
  return () => server as HttpServer;
}

describe('serve --http: subscriptions/listen for tasks', () => {
  const server = withTokens();

  it("pushes the owner's task to its end; another principal's listen acknowledges nothing", async () => {
    const { url } = server();
    const alice = overHttp(url, ALICE);
    const marker = sleepMarker();
    const taskId = await task(alice, `echo secret; sleep ${marker}`);

    const bob = await listenOverHttp(url, BOB, listenRequest('b1', [taskId, 'no-such-task']));
    await bob.ended; // nothing of Bob's to follow: acknowledged empty, ended at once
    expect(bob.messages).toEqual([
      expect.objectContaining({
        method: 'notifications/subscriptions/acknowledged',
        params: { notifications: { taskIds: [] }, _meta: { [SUBSCRIPTION_ID]: 'b1' } },
      }),
      expect.objectContaining({ id: 'b1', result: expect.objectContaining({ resultType: 'complete' }) }),
    ]);
    expect(JSON.stringify(bob.messages)).not.toContain('secret');

    const listen = await listenOverHttp(url, ALICE, listenRequest('a1', [taskId]));
    expect(listen.status).toBe(200);
    await until(() => toldStatuses(listen.messages).includes('working'), 'working');
    expect(listen.messages[0]).toMatchObject({ params: { notifications: { taskIds: [taskId] } } });
    expect((await alice('tasks/cancel', { taskId })).error).toBeUndefined();
    await listen.ended;
    expect(toldStatuses(listen.messages)).toEqual(['working', 'cancelled']);
    for (const note of listen.messages.filter((message) => message.method === 'notifications/tasks'))
      expect(TaskStatusNotificationV2Schema.safeParse(note).success).toBe(true);
    expect(listen.messages.at(-1)).toMatchObject({
      id: 'a1',
      result: { resultType: 'complete', _meta: { [SUBSCRIPTION_ID]: 'a1' } },
    });
  });

  it('refuses a listen without the extension (400, -32021) or with too many ids', async () => {
    const { url } = server();
    const bare = await listenOverHttp(url, ALICE, listenRequest('c1', ['x'], { tasks: false }));
    await bare.ended;
    expect(bare.status).toBe(400);
    expect(bare.messages[0]).toMatchObject({ id: 'c1', error: { code: -32021 } });
    // A million ids: refused on their count, none looked up.
    const many = Array.from({ length: 1_000_000 }, (_, index) => `t${index}`);
    const huge = await listenOverHttp(url, ALICE, listenRequest('c2', many));
    await huge.ended;
    expect(huge.messages[0]).toMatchObject({
      id: 'c2',
      error: { code: -32602, message: /at most 100 taskIds/ },
    });
  });

  it(`at most ${MAX_TASK_LISTENS} open per principal; a client gone mid-stream frees its place`, async () => {
    const { url } = server();
    const alice = overHttp(url, ALICE);
    const marker = sleepMarker();
    const taskId = await task(alice, `sleep ${marker}`);
    const open = [];
    for (let index = 0; index < MAX_TASK_LISTENS; index++) {
      const listen = await listenOverHttp(url, ALICE, listenRequest(`m${index}`, [taskId]));
      await until(() => toldStatuses(listen.messages).includes('working'), `listen ${index} working`);
      open.push(listen);
    }
    const over = await listenOverHttp(url, ALICE, listenRequest('over', [taskId]));
    await over.ended;
    expect(over.messages[0]).toMatchObject({
      error: { code: -32603, message: /Subscription limit reached/ },
    });
    // Another principal is counted apart.
    const bob = await listenOverHttp(url, BOB, listenRequest('bob', [taskId]));
    await bob.ended;
    expect(bob.messages[0]).toMatchObject({ params: { notifications: { taskIds: [] } } });

    for (const listen of open) listen.abort();
    // Each place is given back as the server sees its client go: try until one is admitted.
    const deadline = Date.now() + 20_000;
    for (let attempt = 0; ; attempt++) {
      const again = await listenOverHttp(url, ALICE, listenRequest(`again-${attempt}`, [taskId]));
      await until(() => again.messages.length > 0, 'an answer');
      if (again.messages[0]?.error === undefined) {
        expect(again.messages[0]).toMatchObject({ params: { notifications: { taskIds: [taskId] } } });
        again.abort();
        break;
      }
      expect(Date.now()).toBeLessThan(deadline);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    await alice('tasks/cancel', { taskId });
  });

  it('counts a listen that follows no task too (it never ends by itself)', async () => {
    const { url } = server();
    const noTask = (id: string) => ({
      jsonrpc: '2.0' as const,
      id,
      method: 'subscriptions/listen',
      params: { notifications: { toolsListChanged: true }, _meta: envelope(false) },
    });
    const open = [];
    for (let index = 0; index < MAX_TASK_LISTENS; index++) {
      const listen = await listenOverHttp(url, ALICE, noTask(`n${index}`));
      await until(() => listen.messages.length > 0, `listen ${index} acknowledged`);
      expect(listen.messages[0]).toMatchObject({ method: 'notifications/subscriptions/acknowledged' });
      open.push(listen);
    }
    for (const over of [noTask('over'), listenRequest('over-tasks', [])]) {
      const refused = await listenOverHttp(url, ALICE, over);
      await refused.ended;
      expect(refused.messages[0]).toMatchObject({
        error: { code: -32603, message: /Subscription limit reached/ },
      });
    }
    const bob = await listenOverHttp(url, BOB, noTask('bob'));
    await until(() => bob.messages.length > 0, "bob's listen acknowledged");
    expect(bob.messages[0]).toMatchObject({ method: 'notifications/subscriptions/acknowledged' });
    bob.abort();
    for (const listen of open) listen.abort();
  });
});

describe('serve --http: an approval inside a task, pushed (CODEXEC_APPROVAL=ask)', () => {
  const server = withTokens({ CODEXEC_APPROVAL: 'ask' });

  it('input_required with its request, then completed once approved through another connection', async () => {
    const { url } = server();
    const alice = overHttp(url, ALICE);
    const taskId = await task(alice, 'echo approved');
    const listen = await listenOverHttp(url, ALICE, listenRequest('ask', [taskId]));
    await until(() => toldStatuses(listen.messages).includes('input_required'), 'input_required');
    const asking = listen.messages.find((message) => message.params?.status === 'input_required');
    expect(asking?.params).toMatchObject({
      inputRequests: { approval: { method: 'elicitation/create', params: { mode: 'form' } } },
    });
    expect(
      (await alice('tasks/update', { taskId, inputResponses: { approval: APPROVE } })).error,
    ).toBeUndefined();
    await listen.ended;
    const statuses = toldStatuses(listen.messages);
    expect(statuses[0]).toBe('input_required');
    expect(statuses.at(-1)).toBe('completed');
    expect(statuses.slice(1, -1).every((status) => status === 'working')).toBe(true);
    expect(listen.messages.at(-1)).toMatchObject({ id: 'ask', result: { resultType: 'complete' } });
  });
});

describe('serve --http: a listen open when the server stops', () => {
  const server = withTokens();

  it('is told its task failed "server shut down", then ends gracefully', async () => {
    const { url } = server();
    const alice = overHttp(url, ALICE);
    const taskId = await task(alice, `sleep ${sleepMarker()}`);
    const listen = await listenOverHttp(url, ALICE, listenRequest('stop', [taskId]));
    await until(() => toldStatuses(listen.messages).includes('working'), 'working');
    await server().stop();
    await listen.ended;
    expect(toldStatuses(listen.messages)).toEqual(['working', 'failed']);
    expect(listen.messages.find((message) => message.params?.status === 'failed')?.params).toMatchObject({
      statusMessage: 'server shut down',
    });
    expect(listen.messages.at(-1)).toMatchObject({ id: 'stop', result: { resultType: 'complete' } });
  });
});
