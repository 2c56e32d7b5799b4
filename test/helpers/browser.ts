// Debian's chromium driven by playwright-core (Playwright's own browser download does not work
// here), for the dashboard's tests. Screenshots go to test-results/dashboard/ (gitignored).
import { mkdirSync } from 'node:fs';
import { resolve } from 'node:path';
import { type Browser, chromium, type Page } from 'playwright-core';

export const CHROMIUM = process.env.CODEXEC_TEST_CHROMIUM ?? '/usr/bin/chromium';
export const SHOTS = resolve(import.meta.dirname, '../../test-results/dashboard');

export async function launchBrowser(): Promise<Browser> {
  mkdirSync(SHOTS, { recursive: true });
  // --no-sandbox: the tests may run as root, where chromium refuses its own sandbox.
  return chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
}

/** A fresh page (its own sessionStorage) signed in with `token` at the server's dashboard. */
export async function signedIn(browser: Browser, base: string, token: string): Promise<Page> {
  const page = await browser.newPage({ viewport: { width: 1200, height: 800 } });
  await page.goto(base);
  await page.fill('input[name=token]', token);
  await page.click('button[type=submit]');
  await page.waitForSelector('header .who');
  return page;
}

export async function shoot(page: Page, name: string): Promise<void> {
  await page.screenshot({ path: resolve(SHOTS, `${name}.png`), fullPage: true });
}

/** Open one of the dashboard's views by its button. */
export async function openView(
  page: Page,
  label: 'Live runs' | 'Sessions' | 'Log search' | 'Audit' | 'Health',
) {
  await page.click(`nav button:text-is("${label}")`);
}
