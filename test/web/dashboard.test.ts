// The dashboard of serve --http in a real browser: sign-in, a run's output streaming
// into the page before the run ends, principals' isolation (an admin sees all), closing a
// session, log search. Prints the page's weight and paint timings.
import { readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { gzipSync } from 'node:zlib';
import type { Client } from '@modelcontextprotocol/client';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser, openView, shoot, signedIn } from '../helpers/browser.js';
import { connectHttp, type HttpServer, startHttp } from '../helpers/http.js';
import { callTool, tempDir } from '../helpers/server.js';

const ALICE = 'alice-token-0123456789';
const BOB = 'bob-token-0123456789ab';
const CAROL = 'carol-token-0123456789'; // CODEXEC_HTTP_ADMINS
const ASSETS = resolve(import.meta.dirname, '../../dist/web/assets');

describe('serve --http: the dashboard', () => {
  let dir: string;
  let server: HttpServer;
  let base: string;
  let browser: Browser;
  const clients: Client[] = [];
  const client = async (token: string) => {
    const made = await connectHttp(server.url, token, 'legacy');
    clients.push(made);
    return made;
  };

  beforeAll(async () => {
    dir = tempDir();
    const tokens = join(dir, 'tokens.json');
    writeFileSync(tokens, JSON.stringify({ alice: ALICE, bob: BOB, carol: CAROL }));
    server = await startHttp({ env: { CODEXEC_HTTP_TOKENS: tokens, CODEXEC_HTTP_ADMINS: 'carol' } });
    base = new URL('/', server.url).href;
    browser = await launchBrowser();
  }, 60_000);
  afterAll(async () => {
    await Promise.all(clients.map((made) => made.close().catch(() => {})));
    await browser?.close();
    await server?.stop();
    rmSync(dir, { recursive: true, force: true });
    if (server) rmSync(server.home, { recursive: true, force: true });
  });

  it('refuses a wrong token and shows the views for a right one', async () => {
    const page = await browser.newPage({ viewport: { width: 1200, height: 800 } });
    await page.goto(base);
    await page.fill('input[name=token]', 'not-a-token-of-anyone-here');
    await page.click('button[type=submit]');
    await expect.poll(() => page.textContent('[role=alert]')).toContain('That token was refused');
    expect(await page.$('header')).toBeNull();
    await shoot(page, 'signin-refused');
    await page.fill('input[name=token]', ALICE);
    await page.click('button[type=submit]');
    await page.waitForSelector('header .who');
    expect(await page.textContent('header .who')).toBe('alice');
    expect(await page.textContent('main h2')).toContain('Live runs');
    // Kept for this tab: a reload stays signed in.
    await page.reload();
    await page.waitForSelector('header .who');
    await page.close();
  }, 30_000);

  it("shows a run's first line while the run still sleeps, then its end", async () => {
    const page = await signedIn(browser, base, ALICE);
    await page.waitForSelector('.live.on');
    const alice = await client(ALICE);
    const started = Date.now();
    const call = callTool<{ stdout: string }>(alice, 'execute_code', {
      language: 'bash',
      code: 'echo first-line-7f3; sleep 3; echo second-line-9c1',
    });
    const output = page.locator('article.run pre.output', { hasText: 'first-line-7f3' });
    await output.waitFor({ timeout: 10_000 });
    const seenAfter = Date.now() - started;
    expect(await output.textContent()).not.toContain('second-line-9c1');
    expect(await page.getAttribute('article.run', 'data-status')).toBe('running');
    await shoot(page, 'run-streaming');
    const result = await call;
    const endedAfter = Date.now() - started;
    expect(result.value.stdout).toBe('first-line-7f3\nsecond-line-9c1\n');
    expect(seenAfter).toBeLessThan(endedAfter);
    await page.locator('article.run[data-status=done] pre', { hasText: 'second-line-9c1' }).waitFor();
    console.log(
      `dashboard: first line in the page after ${seenAfter} ms; the run answered after ${endedAfter} ms`,
    );
    await shoot(page, 'run-done');
    await page.close();
  }, 40_000);

  it("shows a principal only its own runs and sessions; an admin sees everyone's", async () => {
    const alice = await client(ALICE);
    const bob = await client(BOB);
    await callTool(alice, 'execute_code', { language: 'bash', code: 'echo alice-only-run' });
    await callTool(bob, 'execute_code', { language: 'bash', code: 'echo bob-only-run' });
    const session = await callTool<{ session_id: string }>(alice, 'start_session', { language: 'bash' });
    const aliceSession = session.value.session_id;

    const bobPage = await signedIn(browser, base, BOB);
    await bobPage.locator('pre.output', { hasText: 'bob-only-run' }).waitFor();
    expect(await bobPage.textContent('main')).not.toContain('alice-only-run');
    await openView(bobPage, 'Sessions');
    await bobPage.locator('text=No live sessions.').waitFor();
    expect(await bobPage.textContent('main')).not.toContain(aliceSession);
    // Nor through the API: alice's session is "not found" for bob, as over MCP.
    const refused = await fetch(new URL(`/api/sessions/${aliceSession}/close`, base), {
      method: 'POST',
      headers: { authorization: `Bearer ${BOB}` },
    });
    expect(refused.status).toBe(404);

    const carolPage = await signedIn(browser, base, CAROL);
    expect(await carolPage.textContent('header .who')).toContain('admin');
    await carolPage.locator('pre.output', { hasText: 'alice-only-run' }).waitFor();
    await carolPage.locator('pre.output', { hasText: 'bob-only-run' }).waitFor();
    await shoot(carolPage, 'admin-runs');
    await openView(carolPage, 'Sessions');
    const row = carolPage.locator(`tr[data-session="${aliceSession}"]`);
    await row.waitFor();
    expect(await row.textContent()).toContain('alice');
    await shoot(carolPage, 'admin-sessions');
    await callTool(alice, 'close_session', { session_id: aliceSession });
    await Promise.all([bobPage.close(), carolPage.close()]);
  }, 60_000);

  it('closes a session from the page', async () => {
    const alice = await client(ALICE);
    const started = await callTool<{ session_id: string }>(alice, 'start_session', { language: 'python' });
    const id = started.value.session_id;
    const page = await signedIn(browser, base, ALICE);
    await openView(page, 'Sessions');
    const row = page.locator(`tr[data-session="${id}"]`);
    await row.waitFor();
    await shoot(page, 'sessions');
    await row.locator('button:text-is("Close")').click();
    await row.waitFor({ state: 'detached' });
    const listed = await callTool<{ sessions: { session_id: string }[] }>(alice, 'list_sessions', {});
    expect(listed.value.sessions.map((session) => session.session_id)).not.toContain(id);
    const sent = await callTool<{ code?: string }>(alice, 'send_to_session', {
      session_id: id,
      code: 'print(1)',
    });
    expect(sent.isError).toBe(true);
    await page.close();
  }, 40_000);

  it('finds a run by a word of its output, for its principal only', async () => {
    const alice = await client(ALICE);
    await callTool(alice, 'execute_code', { language: 'python', code: 'print("needle" + "word5x")' });
    const page = await signedIn(browser, base, ALICE);
    await openView(page, 'Log search');
    await page.fill('input[name=query]', 'needleword5x');
    await page.click('form.search button[type=submit]');
    const hit = page.locator('tr[data-execution]', { hasText: 'word5x' });
    await expect.poll(() => hit.count(), { timeout: 10_000 }).toBe(1);
    await shoot(page, 'log-search');
    const bobPage = await signedIn(browser, base, BOB);
    await openView(bobPage, 'Log search');
    await bobPage.fill('input[name=query]', 'needleword5x');
    await bobPage.click('form.search button[type=submit]');
    await bobPage.locator('text=0 match(es)').waitFor();
    await Promise.all([page.close(), bobPage.close()]);
  }, 40_000);

  it('shows health, and serves its files with long cache and an ETag', async () => {
    const page = await signedIn(browser, base, ALICE);
    await openView(page, 'Health');
    await page.locator('dl.health').waitFor();
    expect(await page.textContent('dl.health')).toContain('Run slots');
    await shoot(page, 'health');
    const html = await fetch(base);
    const etag = html.headers.get('etag') ?? '';
    expect(etag).not.toBe('');
    expect((await fetch(base, { headers: { 'if-none-match': etag } })).status).toBe(304);
    const script = /src="(\/assets\/app\.js\?v=[\w-]+)"/.exec(await html.text())?.[1] ?? '';
    const js = await fetch(new URL(script, base));
    expect(js.headers.get('cache-control')).toContain('immutable');
    expect(js.headers.get('etag')).not.toBeNull();
    await page.close();
  }, 30_000);

  it('measures page weight and paint', async () => {
    const sizes = ['index.html', 'app.js', 'app.css'].map((name) => {
      const bytes = readFileSync(join(ASSETS, name));
      return { name, bytes: bytes.length, gzipped: gzipSync(bytes, { level: 9 }).length };
    });
    const total = sizes.reduce((sum, size) => sum + size.bytes, 0);
    const gzipped = sizes.reduce((sum, size) => sum + size.gzipped, 0);
    const page = await browser.newPage();
    await page.goto(base);
    await page.waitForSelector('input[name=token]');
    // A string: the test's types are Node's, the expression runs in the page.
    const timing = (await page.evaluate(`(() => {
      const nav = performance.getEntriesByType('navigation')[0];
      const paint = performance.getEntriesByType('paint').map((entry) => [entry.name, entry.startTime]);
      return { domContentLoaded: nav.domContentLoadedEventEnd, ...Object.fromEntries(paint) };
    })()`)) as { domContentLoaded: number };
    console.log(
      `dashboard page weight: ${sizes.map((s) => `${s.name} ${s.bytes} B (${s.gzipped} gz)`).join(', ')}; ` +
        `total ${total} B, ${gzipped} B gzipped; timing (ms) ${JSON.stringify(timing)}`,
    );
    expect(gzipped).toBeLessThan(30_000);
    expect(timing.domContentLoaded).toBeGreaterThan(0);
    await page.close();
  }, 30_000);

  // Last: it breaks the audit chain on purpose.
  it("shows a principal its own audit entries, an admin everyone's and the chain's verification", async () => {
    const alice = await client(ALICE);
    const bob = await client(BOB);
    await callTool(alice, 'execute_code', { language: 'bash', code: 'echo audited-alice' });
    await callTool(bob, 'execute_code', { language: 'bash', code: 'echo audited-bob' });
    const bobPage = await signedIn(browser, base, BOB);
    await openView(bobPage, 'Audit');
    await bobPage.locator('tr[data-audit]', { hasText: 'audited-bob' }).waitFor();
    expect(await bobPage.textContent('main')).not.toContain('audited-alice');
    expect(await bobPage.$('text=Verify the chain')).toBeNull();
    const verifyAsBob = await fetch(new URL('/api/audit/verify', base), {
      method: 'POST',
      headers: { authorization: `Bearer ${BOB}` },
    });
    expect(verifyAsBob.status).toBe(403);

    const carolPage = await signedIn(browser, base, CAROL);
    await openView(carolPage, 'Audit');
    await carolPage.locator('tr[data-audit]', { hasText: 'audited-alice' }).waitFor();
    await carolPage.locator('tr[data-audit]', { hasText: 'audited-bob' }).waitFor();
    await carolPage.click('text=Verify the chain');
    await carolPage.locator('[data-verified=ok]', { hasText: 'Chain intact' }).waitFor();
    await shoot(carolPage, 'audit-verified');
    // One character changed in an entry: the page says where the chain breaks.
    const logs = join(server.home, 'logs');
    const file = join(logs, readdirSync(logs).find((name) => /^audit-.*\.jsonl$/.test(name)) ?? '');
    writeFileSync(file, readFileSync(file, 'utf8').replace('audited-alice', 'audited-alicE'));
    await carolPage.click('text=Verify the chain');
    await carolPage.locator('[data-verified=broken]').waitFor();
    expect(await carolPage.textContent('[data-verified=broken]')).toContain('audit-');
    await shoot(carolPage, 'audit-broken');
    await Promise.all([bobPage.close(), carolPage.close()]);
  }, 40_000);
});
