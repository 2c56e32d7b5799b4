// The approval queue in the dashboard, CODEXEC_APPROVAL=ask CODEXEC_APPROVER=dashboard, with MCP
// clients that declare no elicitation (today they would get APPROVAL_UNAVAILABLE): the call
// waits, its card appears in the page, an approver's answer there decides it (run, refused with
// nothing run, trusted session); principals see only their own and decide none (carol, the
// admin, is the approver by default: CODEXEC_HTTP_APPROVERS unset), and the audit says
// `dashboard` and who decided, with the chain still verifying.
import type { Client } from '@modelcontextprotocol/client';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ALICE,
  auditOf,
  BOB,
  CAROL,
  decideAs,
  listed,
  startApprovalServer,
  waitListed,
} from '../helpers/approvals.js';
import { launchBrowser, shoot, signedIn } from '../helpers/browser.js';
import { connectHttp, type HttpServer } from '../helpers/http.js';
import { callTool, type Era } from '../helpers/server.js';

describe('serve --http: approvals answered in the dashboard', () => {
  let server: HttpServer;
  let base: string;
  let browser: Browser;
  const clients: Client[] = [];
  /** A client of `token` with no elicitation capability: it cannot be asked. */
  const client = async (token: string, era: Era = 'legacy') => {
    const made = await connectHttp(server.url, token, era);
    clients.push(made);
    return made;
  };
  const approvalsPage = async (token: string): Promise<Page> => {
    const page = await signedIn(browser, base, token);
    await page.click('nav button[data-view=approvals]');
    // Connected: the snapshot is in, so an empty list means nothing waits (not "not loaded yet").
    await page.locator('main h2 .live.on').waitFor();
    return page;
  };
  const card = (page: Page, marker: string) => page.locator('article.approval', { hasText: marker });

  beforeAll(async () => {
    server = await startApprovalServer('dashboard');
    base = new URL('/', server.url).href;
    browser = await launchBrowser();
  }, 60_000);
  afterAll(async () => {
    await Promise.all(clients.map((made) => made.close().catch(() => {})));
    await browser?.close();
    await server?.stop();
  });

  it('a call waits until Approve in the page, then returns the run output', async () => {
    const page = await approvalsPage(CAROL);
    const own = await approvalsPage(ALICE);
    const alice = await client(ALICE);
    const call = callTool<{ stdout: string }>(alice, 'execute_code', {
      language: 'bash',
      code: 'echo "approved-$((6 * 7))-k2"',
    });
    const waiting = card(page, 'approved-$((6 * 7))-k2');
    await waiting.waitFor({ timeout: 15_000 });
    expect(await page.getAttribute('nav button[data-view=approvals] .badge', 'data-pending')).toBe('1');
    const shown = await waiting.textContent();
    expect(shown).toContain('execute_code');
    expect(shown).toContain('bash');
    expect(shown).toContain('one-shot');
    expect(shown).toContain('Why:');
    expect(shown).toContain('Runs in: a new, empty workspace of its own');
    // Monospace, read in the page (a string: the test's types are Node's).
    const font = await page.evaluate(
      "getComputedStyle(document.querySelector('article.approval pre.approval-code')).fontFamily",
    );
    expect(font).toMatch(/mono/i);
    // Still waiting: nothing answered the call while the card is up.
    let settled = false;
    void call.then(() => {
      settled = true;
    });
    await new Promise((resolve) => setTimeout(resolve, 500)); // the time a wrong answer is given to land
    expect(settled).toBe(false);
    await shoot(page, 'approval-waiting');
    // Alice sees her call wait, with nothing to press: the requester does not approve itself.
    const hers = card(own, 'approved-$((6 * 7))-k2');
    await hers.waitFor();
    expect(await hers.locator('button').count()).toBe(0);
    expect(await hers.textContent()).toContain('Waits for an approver');
    await shoot(own, 'approval-requester-waits');
    await waiting.locator('button:text-is("Approve")').click();
    const result = await call;
    expect(result.isError).toBe(false);
    expect(result.value.stdout).toBe('approved-42-k2\n');
    await waiting.waitFor({ state: 'detached' });
    expect(await page.$('nav button[data-view=approvals] .badge')).toBeNull();
    await shoot(page, 'approval-none');
    expect(auditOf(server.home).filter((entry) => entry.input_code.includes('-k2'))).toMatchObject([
      { principal: 'alice', approved: true, approved_by: 'dashboard', decided_by: 'carol', exit_code: 0 },
    ]);
    await Promise.all([page.close(), own.close()]);
  }, 60_000);

  it('Deny: the call gets APPROVAL_DENIED and nothing ran', async () => {
    const alice = await client(ALICE);
    const started = await callTool<{ session_id: string }>(alice, 'start_session', { language: 'python' });
    const sessionId = started.value.session_id;
    const page = await approvalsPage(CAROL);
    const call = callTool<{ code: string; error: string }>(alice, 'send_to_session', {
      session_id: sessionId,
      code: "open('denied-m4.txt', 'w').write('ran')",
    });
    const waiting = card(page, 'denied-m4.txt');
    await waiting.waitFor({ timeout: 15_000 });
    expect(await waiting.textContent()).toContain(sessionId);
    await waiting.locator('button:text-is("Deny")').click();
    const result = await call;
    expect(result.isError).toBe(true);
    expect(result.value.code).toBe('APPROVAL_DENIED');
    expect(result.value.error).toContain('Nothing ran');
    const read = await callTool(alice, 'read_file', { session_id: sessionId, path: 'denied-m4.txt' });
    expect(read.isError).toBe(true);
    expect(auditOf(server.home).filter((entry) => entry.input_code.includes('denied-m4'))).toMatchObject([
      { approved: false, approved_by: null, decided_by: 'carol', exit_code: null },
    ]);
    await waiting.waitFor({ state: 'detached' });
    await callTool(alice, 'close_session', { session_id: sessionId });
    await page.close();
  }, 60_000);

  it('Approve & Trust Session: the next send in that session runs unasked', async () => {
    const alice = await client(ALICE, 'modern');
    const started = await callTool<{ session_id: string }>(alice, 'start_session', { language: 'python' });
    const sessionId = started.value.session_id;
    const page = await approvalsPage(CAROL);
    const first = callTool<{ stdout: string }>(alice, 'send_to_session', {
      session_id: sessionId,
      code: 'x = 20; print("trusted-first-p8")',
    });
    const waiting = card(page, 'trusted-first-p8');
    await waiting.waitFor({ timeout: 15_000 });
    await shoot(page, 'approval-session');
    await waiting.locator('button:text-is("Approve & Trust Session")').click();
    expect((await first).value.stdout).toBe('trusted-first-p8\n');
    // Asked of nobody: it answers without a card, and the queue stays empty throughout.
    const second = await callTool<{ stdout: string }>(alice, 'send_to_session', {
      session_id: sessionId,
      code: 'print(x + 22)',
    });
    expect(second.value.stdout).toBe('42\n');
    expect(await listed(base, ALICE)).toEqual([]);
    const entries = auditOf(server.home).filter((entry) => entry.tool === 'send_to_session');
    expect(entries.slice(-2)).toMatchObject([
      { approved: true, approved_by: 'dashboard', decided_by: 'carol' },
      { approved: true, approved_by: 'trusted_session', input_code: 'print(x + 22)' },
    ]);
    await callTool(alice, 'close_session', { session_id: sessionId });
    await page.close();
  }, 60_000);

  it("bob neither sees nor decides alice's approval, in the page or the API; carol (admin) does", async () => {
    const alice = await client(ALICE);
    const call = callTool<{ stdout: string }>(alice, 'execute_code', {
      language: 'python',
      code: 'print("alice-waits-q7")',
    });
    const { id } = await waitListed(base, ALICE, 'alice-waits-q7');
    const bobPage = await approvalsPage(BOB);
    await bobPage.locator('text=Nothing waits for approval').waitFor();
    expect(await bobPage.textContent('main')).not.toContain('alice-waits-q7');
    expect(await bobPage.$('nav button[data-view=approvals] .badge')).toBeNull();
    await shoot(bobPage, 'approval-bob-sees-none');
    expect(await listed(base, BOB)).toEqual([]);
    // Nor by its id: bob is no approver (refused whatever the id, so it tells nothing).
    expect(await decideAs(base, BOB, id, 'approve')).toBe(403);
    expect(await decideAs(base, BOB, id, 'deny')).toBe(403);
    expect(await decideAs(base, BOB, 'no-such-approval', 'deny')).toBe(403);
    expect((await listed(base, ALICE)).map((approval) => approval.id)).toEqual([id]);

    const carolPage = await approvalsPage(CAROL);
    const waiting = card(carolPage, 'alice-waits-q7');
    await waiting.waitFor();
    expect(await waiting.locator('.tag').first().textContent()).toBe('alice');
    await shoot(carolPage, 'approval-admin');
    await waiting.locator('button:text-is("Approve")').click();
    expect((await call).value.stdout).toBe('alice-waits-q7\n');
    // Answered: gone for everyone, and a second answer finds nothing.
    expect(await decideAs(base, CAROL, id, 'deny')).toBe(404);
    expect(auditOf(server.home).filter((entry) => entry.input_code.includes('alice-waits-q7'))).toMatchObject(
      [{ principal: 'alice', approved: true, approved_by: 'dashboard', decided_by: 'carol' }],
    );
    await Promise.all([bobPage.close(), carolPage.close()]);
  }, 60_000);

  it('a 2026-era call without elicitation waits too; the audit chain still verifies', async () => {
    const alice = await client(ALICE, 'modern');
    const call = callTool<{ stdout: string }>(alice, 'execute_code', {
      language: 'node',
      code: 'console.log("modern-" + 7 * 6)',
    });
    const { id } = await waitListed(base, ALICE, 'modern-');
    expect(await decideAs(base, CAROL, id, 'approve')).toBe(200);
    expect((await call).value.stdout).toBe('modern-42\n');
    const verify = await fetch(new URL('/api/audit/verify', base), {
      method: 'POST',
      headers: { authorization: `Bearer ${CAROL}` },
    });
    const report = (await verify.json()) as { ok: boolean; entries: number };
    expect(report.ok).toBe(true);
    expect(report.entries).toBe(auditOf(server.home).length);
  }, 60_000);
});
