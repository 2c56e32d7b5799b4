// The dashboard's "failures by cause" chart in a real browser: runs that
// fail in known ways (a non-zero exit, a timeout, a memory limit) counted by cause, a send left
// waiting for input not counted, a principal's chart its own runs only, an admin's everyone's.
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Client } from '@modelcontextprotocol/client';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser, shoot, signedIn } from '../helpers/browser.js';
import { connectHttp, type HttpServer, startHttp } from '../helpers/http.js';
import { callTool, tempDir } from '../helpers/server.js';

const ALICE = 'alice-token-0123456789';
const BOB = 'bob-token-0123456789ab';
const CAROL = 'carol-token-0123456789'; // CODEXEC_HTTP_ADMINS

/** The chart's counts as the page shows them: cause → the number beside its bar. */
async function chart(page: Page): Promise<Record<string, number>> {
  const rows = page.locator('svg[aria-label="failures by cause"] g[data-cause]');
  const counts: Record<string, number> = {};
  for (const row of await rows.all()) {
    const cause = (await row.getAttribute('data-cause')) ?? '';
    counts[cause] = Number(await row.locator('text').nth(1).textContent());
  }
  return counts;
}

describe('serve --http: failures by cause', () => {
  let dir: string;
  let server: HttpServer;
  let base: string;
  let browser: Browser;
  const clients: Client[] = [];

  beforeAll(async () => {
    dir = tempDir();
    const tokens = join(dir, 'tokens.json');
    writeFileSync(tokens, JSON.stringify({ alice: ALICE, bob: BOB, carol: CAROL }));
    server = await startHttp({
      env: { CODEXEC_HTTP_TOKENS: tokens, CODEXEC_HTTP_ADMINS: 'carol', CODEXEC_MEMORY_MB: '128' },
    });
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

  it("counts each principal's failed runs by cause; an admin sees everyone's", async () => {
    const alice = await connectHttp(server.url, ALICE, 'legacy');
    const bob = await connectHttp(server.url, BOB, 'legacy');
    clients.push(alice, bob);
    const run = (client: Client, code: string, extra: Record<string, unknown> = {}) =>
      callTool<{ exit_code: number | null; timed_out: boolean; limit?: string }>(client, 'execute_code', {
        language: 'bash',
        code,
        ...extra,
      });
    expect((await run(alice, 'echo fine')).value.exit_code).toBe(0);
    expect((await run(alice, 'exit 3')).value.exit_code).toBe(3);
    expect((await run(alice, 'sleep 20', { timeout_ms: 500 })).value.timed_out).toBe(true);
    const big = await callTool<{ limit?: string }>(alice, 'execute_code', {
      language: 'python',
      code: 'x = bytearray(1024 * 1024 * 512)',
    });
    expect(big.value.limit).toBe('memory');
    // A send waiting for input has success: false yet is a question, not a failure.
    const session = await callTool<{ session_id: string }>(alice, 'start_session', { language: 'python' });
    const sent = await callTool<{ waiting_for_input?: boolean }>(alice, 'send_to_session', {
      session_id: session.value.session_id,
      code: 'name = input("name? ")',
    });
    expect(sent.value.waiting_for_input).toBe(true);
    expect((await run(bob, 'exit 4')).value.exit_code).toBe(4);
    expect((await run(bob, 'exit 5')).value.exit_code).toBe(5);

    const alicePage = await signedIn(browser, base, ALICE);
    const aliceCaption = alicePage.locator('figure.failures figcaption');
    await expect.poll(() => aliceCaption.textContent()).toContain('3 of 5 ended run(s)');
    expect(await chart(alicePage)).toEqual({
      error: 1,
      timeout: 1,
      cancelled: 0,
      'limit:memory': 1,
      failed: 0,
    });
    // The run list agrees: the waiting send is not shown as failed.
    const waiting = alicePage.locator('article.run', { hasText: 'name = input' });
    expect(await waiting.getAttribute('data-status')).toBe('done');
    await shoot(alicePage, 'failures-alice');

    const bobPage = await signedIn(browser, base, BOB);
    await expect.poll(() => bobPage.textContent('figure.failures figcaption')).toContain('2 of 2 ended');
    expect(await chart(bobPage)).toEqual({ error: 2, timeout: 0, cancelled: 0, limit: 0, failed: 0 });

    const carolPage = await signedIn(browser, base, CAROL);
    await expect.poll(() => carolPage.textContent('figure.failures figcaption')).toContain('5 of 7 ended');
    expect(await chart(carolPage)).toMatchObject({ error: 3, timeout: 1, 'limit:memory': 1 });
    await shoot(carolPage, 'failures-admin');

    // A failure while the page is open reaches the chart through the event stream.
    await run(bob, 'exit 6');
    await expect.poll(async () => (await chart(bobPage)).error).toBe(3);
    await Promise.all([alicePage.close(), bobPage.close(), carolPage.close()]);
  }, 90_000);
});
