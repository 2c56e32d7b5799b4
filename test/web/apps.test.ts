// The MCP Apps result view in Chromium, inside a minimal host page built from the extension's
// host side (apps/host.ts), over the real server on stdio: a run's approval shown and answered
// from the view (approve, deny, trust reach the server; a 2025-era task's question too), then its
// result: a matplotlib figure and a table, a traceback, 200,000 lines paged from the saved output;
// printed markup stays text.
// A client without apps sees today's tools/list and resources/list.
import type { CallToolResult } from '@modelcontextprotocol/client';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { APPS, APPS_MIME, bundleHost, readView, type ShownView, showView, VIEW } from '../helpers/apps.js';
import { launchBrowser, shoot } from '../helpers/browser.js';
import { type ElicitParams, ERAS, startServer, type TestServer } from '../helpers/server.js';

const VIEWED = ['execute_code', 'execute_command', 'run_script', 'send_to_session'];

const FIGURE = [
  'import matplotlib.pyplot as plt',
  'plt.plot([1, 2, 3], [4, 1, 9])',
  'plt.title("three points")',
  'plt.show()',
  'print("city,people")',
  'print("Lyon,522969")',
  'print("Nantes,320732")',
  'print()',
  'print("<b>not bold</b><img src=x onerror=alert(1)>")',
].join('\n');
const TRACEBACK = 'def inner():\n    raise ValueError("the answer is not 41")\n\ninner()\n';
const LINES = 'for i in range(200_000):\n    print(f"line {i}")\n';
/** read_file's page of a run's saved output when no length is asked (docs/tools.md). */
const PAGE_BYTES = 64 * 1024;

describe.each(ERAS)('MCP Apps: what a client without apps sees (%s era)', (era) => {
  it('is what it was: no view links, no view-only tool, no ui:// resource', async () => {
    const plain = await startServer({ era });
    const apps = await startServer({ era, capabilities: APPS });
    try {
      const before = await plain.client.listTools();
      const after = await apps.client.listTools();
      expect(JSON.stringify(before)).not.toContain('ui://');
      expect(before.tools.map((tool) => tool.name)).not.toContain('answer_approval');
      expect((await plain.client.listResources()).resources).toEqual([]);
      // With apps: the four tools link the view, the view's own tool is the app's only; what the
      // model is shown (the host keeps app-only tools and _meta from it) is the same list.
      for (const tool of after.tools) {
        const ui = (tool._meta as { ui?: Record<string, unknown> } | undefined)?.ui;
        if (VIEWED.includes(tool.name)) expect(ui).toEqual({ resourceUri: VIEW });
        else if (tool.name === 'answer_approval') expect(ui).toEqual({ visibility: ['app'] });
        else expect(ui).toBeUndefined();
      }
      const modelSees = after.tools
        .filter((tool) => tool.name !== 'answer_approval')
        .map(({ _meta, ...tool }) => tool);
      expect(modelSees).toEqual(before.tools.map(({ _meta, ...tool }) => tool));
      const [resource] = (await apps.client.listResources()).resources;
      expect(resource).toMatchObject({ uri: VIEW, mimeType: APPS_MIME });
      const read = await apps.client.readResource({ uri: VIEW });
      expect(read.contents[0]).toMatchObject({ uri: VIEW, mimeType: APPS_MIME, _meta: { ui: { csp: {} } } });
      const html = (read.contents[0] as { text: string }).text;
      expect(html).toMatch(/^<!doctype html>/i);
      // Nothing loads from elsewhere: no src= or href= to any URL in the document.
      expect(html).not.toMatch(/<(script|link|img)[^>]+(src|href)=/i);
      // The view-only tool refuses a client without apps.
      const refused = await plain.client.callTool({ name: 'answer_approval', arguments: {} });
      expect(refused.isError).toBe(true);
    } finally {
      await Promise.all([plain.close(), apps.close()]);
    }
  }, 60_000);
});

describe('MCP Apps: the result view in a host', () => {
  let server: TestServer;
  let browser: Browser;
  let host: string;
  let html: string;
  const problems: string[] = [];
  const asked: Array<ElicitParams & { _meta?: Record<string, unknown> }> = [];

  beforeAll(async () => {
    server = await startServer({
      env: {
        CODEXEC_APPROVAL: 'ask',
        CODEXEC_PYTHON: '/usr/bin/python3',
        CODEXEC_APPROVAL_TIMEOUT_MS: '60000',
      },
      capabilities: APPS,
      // The host's own approval form is asked, and never answered here: the view answers first.
      elicit: (params) => {
        asked.push(params);
        return new Promise(() => {});
      },
    });
    html = await readView(server.client);
    host = await bundleHost();
    browser = await launchBrowser();
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
    await server?.close();
  });

  const open = (tool: string) => showView(browser, { host, html, client: server.client }, tool, problems);

  /** Call execute_code as the model would, show its approval in the view, answer it there. */
  async function approveIn({ view, input, result: shown }: ShownView, code: string, button: string) {
    const args = { language: 'python', code };
    const call = server.client.callTool({ name: 'execute_code', arguments: args }) as Promise<CallToolResult>;
    await input(args);
    await view.waitForSelector('section.approval');
    expect(await view.textContent('section.approval pre.code')).toBe(code);
    expect(await view.textContent('section.approval dl')).toContain('python');
    expect(await view.textContent('section.approval .reason')).toMatch(/\w/);
    await view.click(`section.approval button.${button}`);
    const result = await call;
    await shown(result);
    return result;
  }

  it('shows the approval, approve reaches the server, then the figure and the table', async () => {
    const shown = await open('execute_code');
    const { page, view } = shown;
    const result = await approveIn(shown, FIGURE, 'approve');
    expect(result.structuredContent).toMatchObject({ success: true, images: [{ mime_type: 'image/png' }] });
    await view.waitForSelector('article.run img.picture');
    const picture = await view.$eval('img.picture', (element) => {
      const img = element as unknown as { src: string; naturalWidth: number };
      return { src: img.src.slice(0, 22), width: img.naturalWidth };
    });
    expect(picture).toEqual({ src: 'data:image/png;base64,', width: expect.any(Number) });
    expect(picture.width).toBeGreaterThan(100);
    expect(await view.$$eval('table tbody tr', (rows) => rows.map((row) => row.textContent))).toEqual([
      'Lyon522969',
      'Nantes320732',
    ]);
    // What the code printed is text: no element came of it, no script ran.
    expect(await view.textContent('section.stdout pre')).toContain(
      '<b>not bold</b><img src=x onerror=alert(1)>',
    );
    expect(await view.$$('section.stdout pre b, section.stdout pre img')).toHaveLength(0);
    await shoot(page, 'apps-figure');
    await page.close();
  }, 60_000);

  it('deny reaches the server: nothing runs, the view shows the refusal', async () => {
    const shown = await open('execute_code');
    const { page, view } = shown;
    const result = await approveIn(shown, 'print("never")', 'deny');
    expect(result.isError).toBe(true);
    expect(result.structuredContent).toMatchObject({ code: 'APPROVAL_DENIED' });
    await view.waitForSelector('section.refused');
    expect(await view.textContent('section.refused')).toContain('APPROVAL_DENIED');
    await page.close();
  }, 60_000);

  it('a 2025-era task: its question waits on tasks/result, and the view answers it', async () => {
    const { page, view, input, result: show } = await open('execute_code');
    const args = { language: 'bash', code: 'echo in-a-task' };
    const loose = z.looseObject({});
    const created = (await server.client.request(
      { method: 'tools/call', params: { name: 'execute_code', arguments: args, task: {} } } as never,
      loose,
    )) as { task: { taskId: string } };
    const { taskId } = created.task;
    const before = asked.length;
    const answer = server.client.request(
      { method: 'tasks/result', params: { taskId } } as never,
      loose,
    ) as Promise<CallToolResult>;
    await input(args);
    await view.waitForSelector('section.approval');
    expect(await view.textContent('section.approval pre.code')).toBe(args.code);
    await view.click('section.approval button.approve');
    const result = await answer;
    expect(result.structuredContent).toMatchObject({ success: true, stdout: 'in-a-task\n' });
    // The client's own form was asked on tasks/result's stream, tagged with the task: the view won.
    expect(
      asked.slice(before).map((params) => params._meta?.['io.modelcontextprotocol/related-task']),
    ).toEqual([{ taskId }]);
    await show(result);
    expect(await view.textContent('section.stdout pre')).toBe('in-a-task\n');
    await page.close();
  }, 60_000);

  it('trust reaches the server; a failed run shows its traceback', async () => {
    const shown = await open('execute_code');
    const { page, view } = shown;
    const result = await approveIn(shown, TRACEBACK, 'trust');
    expect(result.structuredContent).toMatchObject({ success: false });
    await view.waitForSelector('article.run.failed');
    const stderr = await view.textContent('section.stderr.failed pre');
    expect(stderr).toContain('Traceback (most recent call last)');
    expect(stderr).toContain('ValueError: the answer is not 41');
    // Trusted from now on: python in execute_code runs without asking (nobody would answer).
    const trusted = await server.client.callTool({
      name: 'execute_code',
      arguments: { language: 'python', code: 'print(6 * 7)' },
    });
    expect(trusted.structuredContent).toMatchObject({ success: true, stdout: '42\n' });
    await shoot(page, 'apps-traceback');
    await page.close();
  }, 60_000);

  it('pages 200,000 lines from the saved output through the host', async () => {
    const { page, view, input, result: show } = await open('execute_code');
    const args = { language: 'python', code: LINES };
    // Trusted by the previous answer: it runs without asking.
    const result = (await server.client.callTool({
      name: 'execute_code',
      arguments: args,
    })) as CallToolResult;
    await input(args);
    await show(result);
    expect(result.structuredContent).toMatchObject({ truncated: true, output_saved: { stdout: {} } });
    await view.waitForSelector('section.stdout button');
    expect(await view.textContent('article.run header')).toContain('output cut');
    const shown = await view.textContent('section.stdout pre');
    expect(shown).toContain('line 199999');
    expect(shown).not.toContain('line 100000\n');
    // The whole stream, a page at a time, from its start: line after line (the last one may be
    // cut by the page's end), no marker, no tail.
    await view.click('section.stdout button');
    await view.waitForSelector('section.stdout button:text-is("Load more")');
    const sequence = async () => {
      const text = (await view.textContent('section.stdout pre')) ?? '';
      const numbers = text
        .split('\n')
        .slice(0, -1)
        .flatMap((line) => /^line (\d+)$/.exec(line)?.[1] ?? []);
      expect(numbers.every((n, i) => Number(n) === i)).toBe(true);
      return numbers.length;
    };
    // Each click shows one whole page as read_file gives it (64 KiB when no length is asked).
    const shownBytes = async () => Buffer.byteLength((await view.textContent('section.stdout pre')) ?? '');
    expect(await shownBytes()).toBe(PAGE_BYTES);
    const first = await sequence();
    expect(first).toBeGreaterThan(5000);
    await view.click('section.stdout button:text-is("Load more")');
    await expect.poll(shownBytes).toBe(2 * PAGE_BYTES);
    expect(await sequence()).toBeGreaterThan(first + 5000);
    expect(await view.textContent('section.stdout h3')).toMatch(/\d+ lines/);
    await shoot(page, 'apps-paged');
    await page.close();
  }, 120_000);

  it('loaded nothing the CSP refused and opened no dialog', () => {
    expect(problems).toEqual([]);
  });
});
