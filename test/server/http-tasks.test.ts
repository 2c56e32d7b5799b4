// MCP Tasks over serve --http: a task outlives the HTTP
// exchange (and TCP connection) that made it, any later connection of its principal polls and
// cancels it, and another principal is told it does not exist (nor can it answer its approval).
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { connectHttp, type HttpServer, startHttp } from '../helpers/http.js';
import { appeared, processesWith, sleepMarker } from '../helpers/procs.js';
import { tempDir } from '../helpers/server.js';
import { OUTPUT_META, overHttp, pollFor, pollUntilDone, type Reply } from '../helpers/tasks.js';

const ALICE = 'alice-token-0123456789';
const BOB = 'bob-token-0123456789ab';

const outputOf = (reply: Reply) =>
  ((reply.result?._meta as Record<string, unknown> | undefined)?.[OUTPUT_META] as string | undefined) ?? '';

describe('serve --http: MCP Tasks', () => {
  let dir: string;
  let server: HttpServer;

  beforeAll(async () => {
    dir = tempDir();
    const tokens = join(dir, 'tokens.json');
    writeFileSync(tokens, JSON.stringify({ alice: ALICE, bob: BOB }));
    server = await startHttp({ env: { CODEXEC_HTTP_TOKENS: tokens } });
  });
  afterAll(async () => {
    await server?.stop();
    rmSync(dir, { recursive: true, force: true });
    if (server) rmSync(server.home, { recursive: true, force: true });
  });

  it('a task made in one exchange is polled to its result from other connections', async () => {
    // Every request below goes over a TCP connection of its own (overHttp uses no agent).
    const alice = overHttp(server.url, ALICE);
    const created = await alice('tools/call', {
      name: 'execute_code',
      arguments: { language: 'bash', code: 'echo first; sleep 2; echo done' },
    });
    // Answered before the run's end, however busy the machine: the task is still working.
    expect(created.result).toMatchObject({ resultType: 'task', status: 'working' });
    const taskId = created.result?.taskId as string;

    const working = await pollFor(alice, taskId, (reply) => outputOf(reply).includes('first'));
    expect(working.result?.status).toBe('working');
    const done = await pollUntilDone(alice, taskId);
    expect(done.result).toMatchObject({
      status: 'completed',
      result: { structuredContent: { success: true, stdout: 'first\ndone\n' } },
    });
  });

  it('2025-11-25 era: a task made by one SDK client is read by a later one, and not by another principal', async () => {
    const loose = z.looseObject({});
    const first = await connectHttp(server.url, ALICE, 'legacy');
    const created = (await first.request(
      {
        method: 'tools/call',
        params: {
          name: 'execute_code',
          arguments: { language: 'bash', code: 'sleep 1; echo later' },
          task: { ttl: 60_000 },
        },
      } as never,
      loose,
    )) as { task?: { taskId: string; status: string } };
    expect(created.task?.status).toBe('working');
    const taskId = created.task?.taskId as string;
    await first.close();

    const second = await connectHttp(server.url, ALICE, 'legacy');
    const stranger = await connectHttp(server.url, BOB, 'legacy');
    try {
      const result = await second.request({ method: 'tasks/result', params: { taskId } } as never, loose);
      expect(result).toMatchObject({ structuredContent: { stdout: 'later\n' } });
      await expect(
        stranger.request({ method: 'tasks/get', params: { taskId } } as never, loose),
      ).rejects.toMatchObject({ code: -32602 });
    } finally {
      await second.close();
      await stranger.close();
    }
  });

  it("another principal's task is not found: not read, not cancelled", async () => {
    const marker = sleepMarker();
    const alice = overHttp(server.url, ALICE);
    const bob = overHttp(server.url, BOB);
    const created = await alice('tools/call', {
      name: 'execute_code',
      arguments: { language: 'bash', code: `echo mine; sleep ${marker}` },
    });
    const taskId = created.result?.taskId as string;
    await pollFor(alice, taskId, (reply) => outputOf(reply).includes('mine'));

    expect((await bob('tasks/get', { taskId })).error).toMatchObject({ code: -32602 });
    expect((await bob('tasks/cancel', { taskId })).error).toMatchObject({ code: -32602 });
    expect((await alice('tasks/get', { taskId })).result?.status).toBe('working');
    expect((await appeared(marker)).length).toBeGreaterThan(0);

    expect((await alice('tasks/cancel', { taskId })).result).toBeDefined();
    expect((await alice('tasks/get', { taskId })).result?.status).toBe('cancelled');
    const until = Date.now() + 15_000;
    while (processesWith(marker).length > 0 && Date.now() < until)
      await new Promise((resolve) => setTimeout(resolve, 100));
    expect(processesWith(marker)).toEqual([]);
  });
});

describe('serve --http: approval inside a task (CODEXEC_APPROVAL=ask)', () => {
  let dir: string;
  let server: HttpServer;

  beforeAll(async () => {
    dir = tempDir();
    const tokens = join(dir, 'tokens.json');
    writeFileSync(tokens, JSON.stringify({ alice: ALICE, bob: BOB }));
    server = await startHttp({ env: { CODEXEC_HTTP_TOKENS: tokens, CODEXEC_APPROVAL: 'ask' } });
  });
  afterAll(async () => {
    await server?.stop();
    rmSync(dir, { recursive: true, force: true });
    if (server) rmSync(server.home, { recursive: true, force: true });
  });

  it("another principal's tasks/update does not answer it; the owner's, from another connection, does", async () => {
    const alice = overHttp(server.url, ALICE);
    const bob = overHttp(server.url, BOB);
    const approve = { approval: { action: 'accept', content: { decision: 'approve' } } };
    const created = await alice('tools/call', {
      name: 'execute_code',
      arguments: { language: 'bash', code: 'echo alice-approved' },
    });
    expect(created.result).toMatchObject({ resultType: 'task', status: 'input_required' });
    const taskId = created.result?.taskId as string;

    expect((await bob('tasks/update', { taskId, inputResponses: approve })).error).toMatchObject({
      code: -32602,
      message: expect.stringContaining('not found'),
    });
    await new Promise((resolve) => setTimeout(resolve, 300)); // the time a wrong answer is given to land
    const still = await alice('tasks/get', { taskId });
    expect(still.result).toMatchObject({ status: 'input_required', inputRequests: { approval: {} } });

    expect((await alice('tasks/update', { taskId, inputResponses: approve })).error).toBeUndefined();
    const done = await pollUntilDone(alice, taskId);
    expect(done.result).toMatchObject({
      status: 'completed',
      result: { structuredContent: { success: true, stdout: 'alice-approved\n' } },
    });
  });
});
