// The MCP Apps view answering an approval over serve --http, in Chromium inside the AppBridge host
// page. The 2026-07-28 era: a call made as a task waits in input_required, and the view's answer
// (answer_approval, proxied by the host as a request of the same principal) decides it; another
// principal sees none of it and cannot answer it. In the 2025-11-25 era over HTTP the client's
// MCP session (its initialize) says it declared the extension: it is listed the views too.
import { readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Client } from '@modelcontextprotocol/client';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { APPS, bundleHost, readView, showView } from '../helpers/apps.js';
import { launchBrowser } from '../helpers/browser.js';
import { connectHttp, type HttpServer, startHttp } from '../helpers/http.js';
import { tempDir } from '../helpers/server.js';
import { overHttp, pollFor, type Send } from '../helpers/tasks.js';

const ALICE = 'alice-token-0123456789';
const BOB = 'bob-token-0123456789ab';

function audit(home: string): Array<{ input_code: string; approved: boolean; approved_by: string | null }> {
  const dir = join(home, 'logs');
  return readdirSync(dir)
    .filter((name) => /^audit-.*\.jsonl$/.test(name))
    .flatMap((name) => readFileSync(join(dir, name), 'utf8').trimEnd().split('\n'))
    .map((line) => JSON.parse(line));
}

describe('MCP Apps over serve --http: the view answers', () => {
  let dir: string;
  let server: HttpServer;
  /** The hosts' MCP clients, through which the views call the server. */
  let aliceHost: Client;
  let bobHost: Client;
  /** Alice's model's calls, as tasks (the SDK client does not take a task for an answer). */
  let alice: Send;
  let browser: Browser;
  let host: string;
  let html: string;
  const problems: string[] = [];

  beforeAll(async () => {
    dir = tempDir();
    const tokens = join(dir, 'tokens.json');
    writeFileSync(tokens, JSON.stringify({ alice: ALICE, bob: BOB }));
    server = await startHttp({
      env: { CODEXEC_HTTP_TOKENS: tokens, CODEXEC_APPROVAL: 'ask', CODEXEC_APPROVAL_TIMEOUT_MS: '60000' },
    });
    aliceHost = await connectHttp(server.url, ALICE, 'modern', undefined, APPS);
    bobHost = await connectHttp(server.url, BOB, 'modern', undefined, APPS);
    alice = overHttp(server.url, ALICE, APPS.extensions);
    html = await readView(aliceHost);
    host = await bundleHost();
    browser = await launchBrowser();
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
    await Promise.all([aliceHost?.close(), bobHost?.close()]);
    await server?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
    if (server) rmSync(server.home, { recursive: true, force: true });
  });

  const waiting = async (client: Client) =>
    (
      (await client.callTool({ name: 'answer_approval', arguments: {} })).structuredContent as {
        approvals: Array<{ id: string; code: string }>;
      }
    ).approvals;

  for (const [button, expected] of [
    ['approve', { success: true, stdout: 'in-a-task\n' }],
    ['deny', { success: false, code: 'APPROVAL_DENIED' }],
  ] as const) {
    it(`2026 era: a task waits in input_required until the view answers (${button})`, async () => {
      const shown = await showView(browser, { host, html, client: aliceHost }, 'execute_code', problems);
      const args = { language: 'bash', code: `echo in-a-task # ${button}` };
      const created = await alice('tools/call', { name: 'execute_code', arguments: args });
      expect(created.result).toMatchObject({ resultType: 'task', status: 'input_required' });
      const taskId = created.result?.taskId as string;
      await shown.input(args);
      await shown.view.waitForSelector('section.approval');
      expect(await shown.view.textContent('section.approval pre.code')).toBe(args.code);
      // Alice's question is hers alone: Bob's view lists nothing and cannot answer it by its id.
      const question = (await waiting(aliceHost)).find((approval) => approval.code === args.code);
      expect(question).toBeDefined();
      expect(await waiting(bobHost)).toEqual([]);
      const stranger = await bobHost.callTool({
        name: 'answer_approval',
        arguments: { id: question?.id, decision: 'approve' },
      });
      expect(stranger).toMatchObject({ isError: true, structuredContent: { code: 'NOT_FOUND' } });
      expect((await alice('tasks/get', { taskId })).result?.status).toBe('input_required');

      await shown.view.click(`section.approval button.${button}`);
      const done = await pollFor(alice, taskId, (reply) => reply.result?.status === 'completed');
      // The task's own input request is withdrawn by the view's answer.
      expect(done.result?.inputRequests).toBeUndefined();
      const result = done.result?.result as { structuredContent: Record<string, unknown> };
      expect(result.structuredContent).toMatchObject(expected);
      expect(audit(server.home).filter((entry) => entry.input_code === args.code)).toMatchObject([
        button === 'approve' ? { approved: true, approved_by: 'client' } : { approved: false },
      ]);
      await shown.result(result);
      await shown.view.waitForSelector(button === 'approve' ? 'section.stdout' : 'section.refused');
      await shown.page.close();
    }, 60_000);
  }

  it('2025 era: its MCP session knows the client declared the extension, so it is listed the views', async () => {
    const legacy = await connectHttp(server.url, ALICE, 'legacy', undefined, APPS);
    const plain = await connectHttp(server.url, ALICE, 'legacy');
    try {
      const { tools } = await legacy.listTools();
      expect(JSON.stringify(tools)).toContain('ui://');
      expect(tools.map((tool) => tool.name)).toContain('answer_approval');
      // A 2025-era client that did not declare it is listed none, and answer_approval refuses it.
      const bare = (await plain.listTools()).tools;
      expect(bare.length).toBeGreaterThan(10);
      expect(JSON.stringify(bare)).not.toContain('ui://');
      expect(bare.map((tool) => tool.name)).not.toContain('answer_approval');
      const refused = await plain.callTool({ name: 'answer_approval', arguments: {} });
      expect(refused).toMatchObject({ isError: true, structuredContent: { code: 'FORBIDDEN' } });
    } finally {
      await legacy.close();
      await plain.close();
    }
  });

  it('loaded nothing the CSP refused and opened no dialog', () => {
    expect(problems).toEqual([]);
  });
});
