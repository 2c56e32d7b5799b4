// CODEXEC_APPROVER=both: a run (and a host off the egress allowlist) is asked of the client where
// it can be asked AND shown in the dashboard; the first answer wins and the other is withdrawn.
// Over HTTP a client can wait to be asked inside a 2026-era task (tasks/update answers); a plain
// 2026-era call is answered input_required at once, so only its client answers it; a client that
// cannot be asked waits for the page. And over stdio, which has no dashboard, dashboard/both refuse to start.
import { spawn } from 'node:child_process';
import { rmSync } from 'node:fs';
import type { Client } from '@modelcontextprotocol/client';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ALICE,
  auditOf,
  CAROL,
  decideAs,
  listed,
  startApprovalServer,
  waitListed,
} from '../helpers/approvals.js';
import { launchBrowser, shoot, signedIn } from '../helpers/browser.js';
import { connectHttp, type HttpServer } from '../helpers/http.js';
import { fetchCode, origin } from '../helpers/origin.js';
import { baseEnv, CLI, callTool, tempDir } from '../helpers/server.js';
import { overHttp, pollFor, pollUntilDone, type Reply, type Send } from '../helpers/tasks.js';

const APPROVE = { action: 'accept', content: { decision: 'approve' } };

const output = (reply: Reply) =>
  (reply.result?.result as { structuredContent?: { stdout?: string } } | undefined)?.structuredContent
    ?.stdout;

describe('serve --http with CODEXEC_APPROVER=both', () => {
  let server: HttpServer;
  let base: string;
  let browser: Browser;
  let page: Page;
  let send: Send;
  let target: Awaited<ReturnType<typeof origin>>;
  const clients: Client[] = [];

  beforeAll(async () => {
    target = await origin();
    server = await startApprovalServer('both', {
      CODEXEC_NETWORK: 'allowlist',
      CODEXEC_ALLOWED_DOMAINS: 'example.invalid',
    });
    base = new URL('/', server.url).href;
    send = overHttp(server.url, ALICE);
    browser = await launchBrowser();
    page = await signedIn(browser, base, CAROL); // the approver (the admin, by default)
    await page.click('nav button[data-view=approvals]');
    await page.locator('main h2 .live.on').waitFor();
  }, 60_000);
  afterAll(async () => {
    await Promise.all(clients.map((made) => made.close().catch(() => {})));
    await browser?.close();
    await server?.stop();
    target?.server.close();
  });

  /** execute_code as a 2026-era task whose client can be asked: it waits for approval. */
  async function asking(code: string): Promise<string> {
    const created = await send('tools/call', {
      name: 'execute_code',
      arguments: { language: 'python', code },
    });
    expect(created.result).toMatchObject({ resultType: 'task', status: 'input_required' });
    return created.result?.taskId as string;
  }

  it("the client's answer wins: the task runs and the card leaves the page", async () => {
    const taskId = await asking('print("client-wins-r3")');
    const card = page.locator('article.approval', { hasText: 'client-wins-r3' });
    await card.waitFor({ timeout: 15_000 });
    await shoot(page, 'approval-both-waiting');
    await send('tasks/update', { taskId, inputResponses: { approval: APPROVE } });
    const done = await pollUntilDone(send, taskId);
    expect(done.result?.status).toBe('completed');
    expect(output(done)).toBe('client-wins-r3\n');
    await card.waitFor({ state: 'detached', timeout: 5000 });
    expect(await listed(base, ALICE)).toEqual([]);
    expect(auditOf(server.home).filter((entry) => entry.input_code.includes('client-wins-r3'))).toMatchObject(
      [{ approved: true, approved_by: 'client', exit_code: 0 }],
    );
  }, 60_000);

  it("the page's answer wins: the task's input request is withdrawn and a late answer ignored", async () => {
    const taskId = await asking('print("page-wins-v5")');
    const card = page.locator('article.approval', { hasText: 'page-wins-v5' });
    await card.waitFor({ timeout: 15_000 });
    expect((await send('tasks/get', { taskId })).result?.inputRequests).toHaveProperty('approval');
    await card.locator('button:text-is("Approve")').click();
    const done = await pollUntilDone(send, taskId);
    expect(done.result?.status).toBe('completed');
    expect(output(done)).toBe('page-wins-v5\n');
    expect(done.result?.inputRequests).toBeUndefined();
    const late = await send('tasks/update', {
      taskId,
      inputResponses: { approval: { action: 'accept', content: { decision: 'deny' } } },
    });
    expect(late.error).toBeUndefined();
    expect(auditOf(server.home).filter((entry) => entry.input_code.includes('page-wins-v5'))).toMatchObject([
      { approved: true, approved_by: 'dashboard', decided_by: 'carol', exit_code: 0 },
    ]);
  }, 60_000);

  it('a host off the allowlist is asked of both too: the client answers, and the card leaves', async () => {
    const taskId = await asking(fetchCode(target.port, 'host-both-f6'));
    await send('tasks/update', { taskId, inputResponses: { approval: APPROVE } });
    const key = `egress:127.0.0.1:${target.port}`;
    const asked = await pollFor(
      send,
      taskId,
      (reply) => Object.hasOwn((reply.result?.inputRequests as object | undefined) ?? {}, key),
      30_000,
    );
    expect(asked.result?.status).toBe('input_required');
    const card = page.locator('article.approval', { hasText: `127.0.0.1:${target.port}` });
    await card.waitFor({ timeout: 15_000 });
    expect(await card.textContent()).toContain('Connect to');
    await shoot(page, 'approval-both-host');
    expect(target.accepted).toBe(0);
    await send('tasks/update', { taskId, inputResponses: { [key]: APPROVE } });
    const done = await pollUntilDone(send, taskId, 60_000);
    expect(JSON.parse(output(done)?.trim() ?? 'null')).toEqual([200, 'hello']);
    expect(target.accepted).toBe(1);
    await card.waitFor({ state: 'detached', timeout: 5000 });
  }, 90_000);

  it('a plain 2026-era call is asked of its client only; a client that cannot be asked waits for the page', async () => {
    let asked = 0;
    const eliciting = await connectHttp(server.url, ALICE, 'modern', () => {
      asked++;
      return { action: 'accept', content: { decision: 'approve' } };
    });
    clients.push(eliciting);
    const plain = await callTool<{ stdout: string }>(eliciting, 'execute_code', {
      language: 'bash',
      code: 'echo plain-call-w1',
    });
    expect(plain.value.stdout).toBe('plain-call-w1\n');
    expect(asked).toBe(1);

    const mute = await connectHttp(server.url, ALICE, 'legacy');
    clients.push(mute);
    const call = callTool<{ stdout: string }>(mute, 'execute_code', {
      language: 'bash',
      code: 'echo mute-z9',
    });
    const { id } = await waitListed(base, ALICE, 'mute-z9');
    expect(await decideAs(base, CAROL, id, 'approve')).toBe(200);
    expect((await call).value.stdout).toBe('mute-z9\n');
    const entries = auditOf(server.home);
    expect(entries.filter((entry) => entry.input_code.includes('plain-call-w1'))).toMatchObject([
      { approved_by: 'client' },
    ]);
    expect(entries.filter((entry) => entry.input_code.includes('mute-z9'))).toMatchObject([
      { approved_by: 'dashboard' },
    ]);
  }, 60_000);
});

describe('serve over stdio', () => {
  for (const approver of ['dashboard', 'both']) {
    it(`refuses to start with CODEXEC_APPROVER=${approver}, naming the setting`, async () => {
      const home = tempDir();
      const child = spawn(process.execPath, [CLI, 'serve'], {
        env: { ...baseEnv(home), CODEXEC_APPROVAL: 'ask', CODEXEC_APPROVER: approver },
        stdio: ['pipe', 'ignore', 'pipe'],
      });
      let stderr = '';
      child.stderr.on('data', (chunk: Buffer) => {
        stderr += chunk.toString();
      });
      const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
      rmSync(home, { recursive: true, force: true });
      expect(code).toBe(2);
      expect(stderr).toContain(`CODEXEC_APPROVER=${approver} needs serve --http`);
    }, 20_000);
  }
});
