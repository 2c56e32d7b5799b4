// The dashboard behind the reverse proxy http.md recommends (the shipped deploy/haproxy.cfg),
// followed as a newcomer would: the page's module script and API calls come with the proxy's
// origin. Without the setting http.md names the page stays blank (403 for the script); with it,
// it signs in and shows its views.
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser, openView, signedIn } from '../helpers/browser.js';
import { startHaproxy, type TestHaproxy } from '../helpers/haproxy.js';
import { type HttpServer, startHttp } from '../helpers/http.js';
import { freePort } from '../helpers/postgres.js';

const TOKEN = 'haproxy-dashboard-token-0123456789';

describe('the dashboard through HAProxy', () => {
  let browser: Browser;
  const started: Array<HttpServer | TestHaproxy> = [];
  beforeAll(async () => {
    browser = await launchBrowser();
  });
  afterAll(async () => {
    await browser?.close();
    for (const each of started.reverse()) await each.stop();
  });

  /** A replica with `env`, and HAProxy on `port` in front of it; the page's address. */
  async function behindProxy(port: number, env: Record<string, string> = {}): Promise<string> {
    const replica = await startHttp({ env: { CODEXEC_HTTP_TOKEN: TOKEN, ...env } });
    started.push(replica);
    started.push(await startHaproxy([new URL(replica.url).host], port));
    return `http://127.0.0.1:${port}/`;
  }

  it('stays blank without CODEXEC_HTTP_ALLOWED_ORIGINS: its script is refused', async () => {
    const base = await behindProxy(await freePort());
    const page = await browser.newPage();
    const refused: number[] = [];
    page.on('response', (response) => {
      if (new URL(response.url()).pathname.endsWith('.js')) refused.push(response.status());
    });
    await page.goto(base, { waitUntil: 'networkidle' });
    expect(refused).toContain(403);
    expect(await page.$('input[name=token]')).toBeNull();
    await page.close();
  });

  it('works with the proxy origin in CODEXEC_HTTP_ALLOWED_ORIGINS, as http.md says', async () => {
    const port = await freePort();
    const base = await behindProxy(port, { CODEXEC_HTTP_ALLOWED_ORIGINS: `http://127.0.0.1:${port}` });
    const page = await signedIn(browser, base, TOKEN);
    await openView(page, 'Health');
    await page.waitForSelector('text=sandbox');
    await page.close();
  });
});
