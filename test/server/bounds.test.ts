// Server-wide bounds (on everything a caller can grow), each found in a review and
// scaled down through the real server: runs at once (CODEXEC_MAX_CONCURRENT_RUNS, its queue and
// its wait), sessions per principal over HTTP, pending approvals; and a cheap call (health, ping)
// still answers within 2 s while each is saturated.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Client } from '@modelcontextprotocol/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectHttp, type HttpServer, startHttp } from '../helpers/http.js';
import { processesWith } from '../helpers/procs.js';
import { callTool, type ElicitAnswer, startServer, type TestServer, tempDir } from '../helpers/server.js';

interface Refusal {
  success: false;
  code: string;
  error: string;
}
interface Health {
  runs: { running: number; queued: number; max: number };
  pending_approvals: number;
}

/** `sleep <seconds>` as an argument no other process has: count the runs alive from /proc. */
const sleeper = (seconds: number) =>
  `${seconds.toFixed(1)}0000${process.pid}${Math.floor(Math.random() * 1e6)}`;
const run = (client: Client, code: string, options = {}) =>
  callTool<Record<string, unknown>>(client, 'execute_code', { language: 'bash', code }, options);

/** How long a cheap call takes, in ms. */
async function timed(call: () => Promise<unknown>): Promise<number> {
  const started = Date.now();
  await call();
  return Date.now() - started;
}

/** Sample how many processes carry `marker` every 20 ms until `work` settles; the most seen. */
async function peakWhile(marker: string, work: Promise<unknown>): Promise<number> {
  let peak = 0;
  const timer = setInterval(() => {
    peak = Math.max(peak, processesWith(marker).length);
  }, 20);
  try {
    await work;
  } finally {
    clearInterval(timer);
  }
  return peak;
}

describe('CODEXEC_MAX_CONCURRENT_RUNS', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startServer({ env: { CODEXEC_MAX_CONCURRENT_RUNS: '2', CODEXEC_POOL_SIZE: '0' } });
  });
  afterAll(() => server?.close());

  it('10 concurrent runs: never more than 2 alive, all run; health and ping answer within 2 s', async () => {
    const marker = sleeper(0.6);
    const calls = Promise.all(
      Array.from({ length: 10 }, (_, i) => run(server.client, `sleep ${marker}; echo ${i}`)),
    );
    const peak = peakWhile(marker, calls);
    // While 2 run and 8 wait, the cheap calls answer at once.
    calls.catch(() => {}); // asserted below; a failure above must not leave it unhandled
    await expect.poll(() => processesWith(marker).length, { timeout: 5000 }).toBeGreaterThanOrEqual(2);
    expect(processesWith(marker).length).toBeLessThanOrEqual(2);
    expect(await timed(() => server.client.ping())).toBeLessThan(2000);
    let health: Health | undefined;
    expect(
      await timed(async () => {
        health = (await callTool<Health>(server.client, 'health', {})).value;
      }),
    ).toBeLessThan(2000);
    expect(health?.runs).toMatchObject({ running: 2, max: 2 });
    expect(health?.runs.queued).toBeGreaterThan(0);
    expect(await peak).toBeLessThanOrEqual(2);
    const results = await calls;
    expect(results.map((result) => result.value.stdout)).toEqual(
      Array.from({ length: 10 }, (_, i) => `${i}\n`),
    );
    expect((await callTool<Health>(server.client, 'health', {})).value.runs).toEqual({
      running: 0,
      queued: 0,
      max: 2,
    });
  }, 60_000);
});

describe('CODEXEC_MAX_QUEUED_RUNS', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startServer({ env: { CODEXEC_MAX_CONCURRENT_RUNS: '1', CODEXEC_MAX_QUEUED_RUNS: '2' } });
  });
  afterAll(() => server?.close());

  it('past the queue, calls are refused LIMIT_REACHED at once, naming the setting', async () => {
    const marker = sleeper(2);
    const order: string[] = [];
    const calls = Array.from({ length: 6 }, (_, i) =>
      run(server.client, `sleep ${marker}`).then((result) => {
        order.push(i < 3 ? 'ran' : 'refused');
        return result;
      }),
    );
    const refused = await Promise.all(calls.slice(3));
    for (const { isError, value } of refused) {
      expect(isError).toBe(true);
      expect(value).toMatchObject({ success: false, code: 'LIMIT_REACHED' });
      expect(String(value.error)).toContain('CODEXEC_MAX_QUEUED_RUNS');
    }
    for (const { value } of await Promise.all(calls.slice(0, 3)))
      expect(value).toMatchObject({ success: true });
    // At once: every refusal came before the first run (2 s of sleep) ended, however busy the machine.
    expect(order).toEqual(['refused', 'refused', 'refused', 'ran', 'ran', 'ran']);
  }, 30_000);

  it('a call cancelled while it waits leaves the queue', async () => {
    // Long enough to outlast the polls below on a busy machine: the calls must still be waiting.
    const marker = sleeper(8);
    const busy = run(server.client, `sleep ${marker}`);
    await expect.poll(() => processesWith(marker).length, { timeout: 15_000 }).toBe(1);
    const controllers = [new AbortController(), new AbortController()];
    const waiting = controllers.map((controller) =>
      run(server.client, 'echo cancelled', { signal: controller.signal }).catch(() => 'aborted'),
    );
    const queued = async () => (await callTool<Health>(server.client, 'health', {})).value.runs.queued;
    await expect.poll(queued, { timeout: 15_000 }).toBe(2);
    for (const controller of controllers) controller.abort();
    expect(await Promise.all(waiting)).toEqual(['aborted', 'aborted']);
    await expect.poll(queued, { timeout: 15_000 }).toBe(0);
    // Their places are free: two more may wait, and run once the slot is.
    const next = await Promise.all([run(server.client, 'echo one'), run(server.client, 'echo two')]);
    expect(next.map((result) => result.value.stdout)).toEqual(['one\n', 'two\n']);
    expect((await busy).value).toMatchObject({ success: true });
  }, 60_000);
});

describe('CODEXEC_QUEUE_TIMEOUT_MS', () => {
  let server: TestServer;
  let session: string;
  beforeAll(async () => {
    server = await startServer({
      env: { CODEXEC_MAX_CONCURRENT_RUNS: '1', CODEXEC_QUEUE_TIMEOUT_MS: '1000' },
    });
    session = (await callTool<{ session_id: string }>(server.client, 'start_session', { language: 'bash' }))
      .value.session_id;
    await callTool(server.client, 'save_script', {
      name: 'hello',
      description: 'says hello',
      language: 'bash',
      code: 'echo hello',
    });
  });
  afterAll(() => server?.close());

  it('a call that waits longer is refused; every tool that runs code takes a slot', async () => {
    const marker = sleeper(4);
    const busy = run(server.client, `sleep ${marker}`);
    await expect.poll(() => processesWith(marker).length, { timeout: 5000 }).toBe(1);
    const started = Date.now();
    const refused = await Promise.all([
      run(server.client, 'echo never'),
      callTool(server.client, 'execute_command', { command: 'echo never' }),
      callTool(server.client, 'run_script', { name: 'hello' }),
      callTool(server.client, 'send_to_session', { session_id: session, code: 'echo never' }),
      // Into a bash session: refused once it runs, so nothing reaches a registry either way.
      callTool(server.client, 'install_package', { language: 'python', package: 'six', session_id: session }),
    ]);
    const waited = Date.now() - started;
    expect(waited).toBeGreaterThanOrEqual(900);
    expect(waited).toBeLessThan(3000);
    for (const { isError, value } of refused) {
      expect(isError).toBe(true);
      expect(value).toMatchObject({ success: false, code: 'LIMIT_REACHED' });
      expect(String(value.error)).toContain('CODEXEC_QUEUE_TIMEOUT_MS');
    }
    expect((await busy).value).toMatchObject({ success: true });
    // Nothing leaked: the slot is free again, and a session's send takes it like any run.
    expect((await run(server.client, 'echo again')).value).toMatchObject({ stdout: 'again\n' });
    const sent = await callTool(server.client, 'send_to_session', { session_id: session, code: 'echo sent' });
    expect(sent.value).toMatchObject({ stdout: 'sent\n' });
  }, 30_000);
});

describe('sessions per principal (serve --http)', () => {
  const ALICE = 'alice-token-0123456789';
  const BOB = 'bob-token-0123456789ab';
  let server: HttpServer;
  let dir: string;

  beforeAll(async () => {
    dir = tempDir();
    const tokens = join(dir, 'tokens.json');
    writeFileSync(tokens, JSON.stringify({ alice: ALICE, bob: BOB }));
    server = await startHttp({
      env: { CODEXEC_HTTP_TOKENS: tokens, CODEXEC_MAX_SESSIONS: '2', CODEXEC_MAX_SESSIONS_TOTAL: '3' },
    });
  });
  afterAll(() => server?.stop());

  it('each principal has its own CODEXEC_MAX_SESSIONS; all together stop at CODEXEC_MAX_SESSIONS_TOTAL', async () => {
    const alice = await connectHttp(server.url, ALICE, 'modern');
    const bob = await connectHttp(server.url, BOB, 'legacy');
    const start = (client: Client) =>
      callTool<{ session_id: string } & Refusal>(client, 'start_session', { language: 'bash' });
    const a1 = await start(alice);
    const a2 = await start(alice);
    expect([a1.isError, a2.isError]).toEqual([false, false]);
    const aliceOver = await start(alice);
    expect(aliceOver.value).toMatchObject({ success: false, code: 'LIMIT_REACHED' });
    // Alice holds her two: bob still gets his own.
    const b1 = await start(bob);
    expect(b1.isError).toBe(false);
    expect(aliceOver.value.error).toContain('CODEXEC_MAX_SESSIONS=2');
    const bobOver = await start(bob);
    expect(bobOver.value).toMatchObject({ success: false, code: 'LIMIT_REACHED' });
    expect(bobOver.value.error).toContain('CODEXEC_MAX_SESSIONS_TOTAL=3');
    // A cheap call still answers at once.
    expect(await timed(() => callTool(bob, 'health', {}))).toBeLessThan(2000);
    await callTool(alice, 'close_session', { session_id: a1.value.session_id });
    const b2 = await start(bob);
    expect(b2.isError).toBe(false);
    const listed = await callTool<{ sessions: unknown[] }>(bob, 'list_sessions', {});
    expect(listed.value.sessions).toHaveLength(2);
    await alice.close();
    await bob.close();
  }, 60_000);
});

describe('CODEXEC_MAX_PENDING_APPROVALS', () => {
  it('past the bound, a call is refused at once; the form shows only the start of large code', async () => {
    const answers: Array<(answer: ElicitAnswer) => void> = [];
    const forms: string[] = [];
    const server = await startServer({
      era: 'legacy', // a 2025-era elicitation is what the server waits on
      // One principal (stdio's, local): it has no share, only the server-wide bound
      // (test/web/approvers.test.ts has shares).
      env: { CODEXEC_APPROVAL: 'ask', CODEXEC_MAX_PENDING_APPROVALS: '2' },
      elicit: (params) => {
        forms.push(params.message);
        return new Promise((resolve) => answers.push(resolve));
      },
    });
    try {
      const code = `: ${'x'.repeat(1_000_000)}\necho ran`;
      const started = Date.now();
      const calls = Array.from({ length: 8 }, () => run(server.client, code));
      for (const call of calls) call.catch(() => {}); // unanswered ones end with the connection
      const answered = Promise.all(calls.slice(2));
      answered.catch(() => {});
      const refused = await Promise.race([
        answered,
        new Promise<[]>((resolve) => setTimeout(() => resolve([]), 10_000)),
      ]);
      expect(Date.now() - started).toBeLessThan(5000);
      expect(refused).toHaveLength(6);
      for (const { isError, value } of refused) {
        expect(isError).toBe(true);
        expect(value).toMatchObject({ success: false, code: 'LIMIT_REACHED' });
        expect(String(value.error)).toContain('CODEXEC_MAX_PENDING_APPROVALS');
      }
      expect(forms).toHaveLength(2);
      for (const form of forms) {
        expect(form.length).toBeLessThan(10_000);
        expect(form).toContain('more characters');
      }
      // Answered while the two wait (unanswered until below): no call queues behind an approval.
      const health = (await callTool<Health>(server.client, 'health', {})).value;
      expect(health.pending_approvals).toBe(2);
      for (const answer of answers) answer({ action: 'accept', content: { decision: 'approve' } });
      for (const { value } of await Promise.all(calls.slice(0, 2)))
        expect(value).toMatchObject({ stdout: 'ran\n' });
      expect((await callTool<Health>(server.client, 'health', {})).value.pending_approvals).toBe(0);
    } finally {
      await server.close();
    }
  }, 60_000);
});
