// MCP Tasks across replicas (CODEXEC_STORE=postgres://…): two real `serve --http` processes, each
// with a home of its own, on one database and one approval key. A task made through one is polled
// to its result, answered and cancelled through the other (its run on the first stops); what a
// principal trusted through one is trusted by the other; another principal finds nothing; a
// listen through one follows a task on the other (read from the store); a principal's runs per
// minute are counted across both.
import { randomBytes } from 'node:crypto';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type HttpServer, startHttp } from '../helpers/http.js';
import { startPostgres, type TestPostgres } from '../helpers/postgres.js';
import { appeared, processesWith, sleepMarker } from '../helpers/procs.js';
import { tempDir } from '../helpers/server.js';
import {
  listenOverHttp,
  listenRequest,
  OUTPUT_META,
  overHttp,
  pollFor,
  pollUntilDone,
  type Reply,
  toldStatuses,
  until,
} from '../helpers/tasks.js';

const ALICE = 'alice-token-0123456789';
const BOB = 'bob-token-0123456789ab';
const CAROL = 'carol-token-0123456789a';
const TRUST = { approval: { action: 'accept', content: { decision: 'approve_trust_session' } } };

const outputOf = (reply: Reply) =>
  ((reply.result?._meta as Record<string, unknown> | undefined)?.[OUTPUT_META] as string | undefined) ?? '';

describe('serve --http replicas on PostgreSQL: MCP Tasks', () => {
  let cluster: TestPostgres;
  let dir: string;
  let a: HttpServer;
  let b: HttpServer;

  beforeAll(async () => {
    cluster = await startPostgres();
    const url = await cluster.createDatabase('replicas');
    dir = tempDir();
    const tokens = join(dir, 'tokens.json');
    writeFileSync(tokens, JSON.stringify({ alice: ALICE, bob: BOB, carol: CAROL }));
    const key = join(dir, 'approval.key');
    writeFileSync(key, randomBytes(32), { mode: 0o600 });
    const quotas = join(dir, 'quotas.json');
    writeFileSync(quotas, JSON.stringify({ carol: { runs_per_minute: 3 } }));
    const env = {
      CODEXEC_HTTP_TOKENS: tokens,
      CODEXEC_STORE: url,
      CODEXEC_APPROVAL_KEY_FILE: key,
      CODEXEC_APPROVAL: 'ask',
      CODEXEC_QUOTAS: quotas,
    };
    [a, b] = await Promise.all([startHttp({ env }), startHttp({ env })]);
  }, 90_000);
  afterAll(async () => {
    await Promise.all([a?.stop(), b?.stop()]);
    for (const server of [a, b]) if (server) rmSync(server.home, { recursive: true, force: true });
    if (dir) rmSync(dir, { recursive: true, force: true });
    await cluster?.stop();
  });

  // First: alice's trust given here lets her later runs (below) go without asking.
  it('approval asked by a task on A is answered through B; the trust given holds on both', async () => {
    const aliceA = overHttp(a.url, ALICE);
    const aliceB = overHttp(b.url, ALICE);
    const bobB = overHttp(b.url, BOB);
    const created = await aliceA('tools/call', {
      name: 'execute_code',
      arguments: { language: 'bash', code: 'echo approved-on-b' },
    });
    expect(created.result).toMatchObject({ resultType: 'task', status: 'input_required' });
    const taskId = created.result?.taskId as string;
    expect((await aliceB('tasks/get', { taskId })).result?.status).toBe('input_required');
    expect((await bobB('tasks/update', { taskId, inputResponses: TRUST })).error).toMatchObject({
      code: -32602,
    });
    expect((await aliceB('tasks/update', { taskId, inputResponses: TRUST })).error).toBeUndefined();
    const done = await pollUntilDone(aliceB, taskId);
    expect(done.result).toMatchObject({
      status: 'completed',
      result: { structuredContent: { success: true, stdout: 'approved-on-b\n' } },
    });

    // Trusted through A's gate: B runs alice's next bash call without asking; bob is still asked.
    const trusted = await aliceB('tools/call', {
      name: 'execute_code',
      arguments: { language: 'bash', code: 'echo trusted' },
    });
    expect(trusted.result?.status).not.toBe('input_required');
    expect((await pollUntilDone(aliceA, trusted.result?.taskId as string)).result).toMatchObject({
      status: 'completed',
      result: { structuredContent: { stdout: 'trusted\n' } },
    });
    const asked = await bobB('tools/call', {
      name: 'execute_code',
      arguments: { language: 'bash', code: 'echo bob' },
    });
    await pollFor(bobB, asked.result?.taskId as string, (reply) => reply.result?.status === 'input_required');
    expect((await bobB('tasks/cancel', { taskId: asked.result?.taskId })).error).toBeUndefined();
  });

  it('a task made through A is polled to its result through B; bob finds nothing on either', async () => {
    const aliceA = overHttp(a.url, ALICE);
    const aliceB = overHttp(b.url, ALICE);
    const created = await aliceA('tools/call', {
      name: 'execute_code',
      arguments: { language: 'bash', code: 'echo first; sleep 2; echo done' },
    });
    expect(created.result).toMatchObject({ resultType: 'task', status: 'working' });
    const taskId = created.result?.taskId as string;
    const working = await pollFor(aliceB, taskId, (reply) => outputOf(reply).includes('first'));
    expect(working.result?.status).toBe('working');
    for (const server of [a, b])
      expect((await overHttp(server.url, BOB)('tasks/get', { taskId })).error).toMatchObject({
        code: -32602,
      });
    const done = await pollUntilDone(aliceB, taskId);
    expect(done.result).toMatchObject({
      status: 'completed',
      result: { structuredContent: { success: true, stdout: 'first\ndone\n' } },
    });
  });

  it("tasks/cancel through B stops the run on A; bob's cancel does nothing", async () => {
    const marker = sleepMarker();
    const aliceA = overHttp(a.url, ALICE);
    const aliceB = overHttp(b.url, ALICE);
    const created = await aliceA('tools/call', {
      name: 'execute_code',
      arguments: { language: 'bash', code: `echo mine; sleep ${marker}` },
    });
    const taskId = created.result?.taskId as string;
    await pollFor(aliceB, taskId, (reply) => outputOf(reply).includes('mine'));
    expect((await appeared(marker)).length).toBeGreaterThan(0);
    expect((await overHttp(b.url, BOB)('tasks/cancel', { taskId })).error).toMatchObject({ code: -32602 });
    expect((await aliceA('tasks/get', { taskId })).result?.status).toBe('working');

    expect((await aliceB('tasks/cancel', { taskId })).error).toBeUndefined();
    expect((await aliceA('tasks/get', { taskId })).result?.status).toBe('cancelled');
    const until = Date.now() + 15_000;
    while (processesWith(marker).length > 0 && Date.now() < until)
      await new Promise((resolve) => setTimeout(resolve, 100));
    expect(processesWith(marker)).toEqual([]);
  });

  it('a listen through B follows a task on A: its approval, answered through A, and its end', async () => {
    const bobA = overHttp(a.url, BOB);
    const created = await bobA('tools/call', {
      name: 'execute_code',
      arguments: { language: 'bash', code: 'echo listened-across' },
    });
    expect(created.result).toMatchObject({ resultType: 'task', status: 'input_required' });
    const taskId = created.result?.taskId as string;
    const alien = await listenOverHttp(b.url, ALICE, listenRequest('alien', [taskId]));
    await alien.ended;
    expect(alien.messages[0]).toMatchObject({ params: { notifications: { taskIds: [] } } });
    expect(toldStatuses(alien.messages)).toEqual([]);

    const listen = await listenOverHttp(b.url, BOB, listenRequest('across', [taskId]));
    await until(() => toldStatuses(listen.messages).includes('input_required'), 'input_required');
    const approve = { approval: { action: 'accept', content: { decision: 'approve' } } };
    expect((await bobA('tasks/update', { taskId, inputResponses: approve })).error).toBeUndefined();
    await listen.ended; // B reads the store every 500 ms: a short-lived `working` may fall between
    const statuses = toldStatuses(listen.messages);
    expect(statuses[0]).toBe('input_required');
    expect(statuses.at(-1)).toBe('completed');
    expect(statuses.slice(1, -1).every((status) => status === 'working')).toBe(true);
    expect(listen.messages.find((message) => message.params?.status === 'completed')?.params).toMatchObject({
      result: { structuredContent: { stdout: 'listened-across\n' } },
    });
  });

  it("carol's runs_per_minute is spent by her runs through A and B together", async () => {
    // Three runs within one UTC minute: not begun in its last 15 s.
    const second = new Date().getUTCSeconds();
    if (second > 45) await new Promise((resolve) => setTimeout(resolve, (61 - second) * 1000));
    const carolA = overHttp(a.url, CAROL);
    const carolB = overHttp(b.url, CAROL);
    const asking = await carolA('tools/call', {
      name: 'execute_code',
      arguments: { language: 'bash', code: 'echo 1' },
    });
    const taskId = asking.result?.taskId as string;
    await carolB('tasks/update', { taskId, inputResponses: TRUST }); // trusted from now on
    expect((await pollUntilDone(carolB, taskId)).result?.status).toBe('completed');
    const plain = (send: typeof carolA) =>
      send('tools/call', { name: 'execute_code', arguments: { language: 'bash', code: 'echo run' } }, false);
    expect((await plain(carolB)).result?.structuredContent).toMatchObject({ stdout: 'run\n' });
    expect((await plain(carolA)).result?.structuredContent).toMatchObject({ stdout: 'run\n' });
    for (const send of [carolB, carolA])
      expect((await plain(send)).result?.structuredContent).toMatchObject({
        code: 'QUOTA_EXCEEDED',
        limit: 'runs_per_minute',
      });
  }, 30_000);

  it('a task whose replica died reads failed "server restarted" on the survivor', async () => {
    const aliceA = overHttp(a.url, ALICE);
    const aliceB = overHttp(b.url, ALICE);
    const created = await aliceA('tools/call', {
      name: 'execute_code',
      arguments: { language: 'bash', code: `echo left; sleep ${sleepMarker()}` },
    });
    const taskId = created.result?.taskId as string;
    await pollFor(aliceB, taskId, (reply) => outputOf(reply).includes('left'));
    const listen = await listenOverHttp(b.url, ALICE, listenRequest('survivor', [taskId]));
    await until(() => toldStatuses(listen.messages).includes('working'), 'working');
    a.child.kill('SIGKILL'); // no clean stop: its registry row stays until its heartbeat is old
    await a.exited;
    const failed = await pollFor(aliceB, taskId, (reply) => reply.result?.status === 'failed', 20_000);
    expect(failed.result).toMatchObject({ statusMessage: 'server restarted' });
    await listen.ended; // the listen through B tells it too, and ends
    expect(toldStatuses(listen.messages)).toEqual(['working', 'failed']);
  }, 30_000);
});
