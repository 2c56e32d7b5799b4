// An MCP Apps host for the tests: the page of test/web/apps/host.ts (built from the extension's
// AppBridge) in Chromium, showing codexec's result view and passing the view's tool calls to a
// real MCP client of the server, over stdio or HTTP alike.
import { resolve } from 'node:path';
import type { Client } from '@modelcontextprotocol/client';
import { build } from 'esbuild';
import type { Browser, Frame, Page } from 'playwright-core';

export const VIEW = 'ui://codexec/view';
export const APPS_MIME = 'text/html;profile=mcp-app';
/** The client capabilities of a host that shows MCP Apps views. */
export const APPS = { extensions: { 'io.modelcontextprotocol/ui': { mimeTypes: [APPS_MIME] } } };

interface Host {
  openView(html: string, tool: string): Promise<void>;
  sendInput(args: unknown): Promise<void>;
  sendResult(result: unknown): Promise<void>;
}

/** The host page's script, bundled for the browser. */
export async function bundleHost(): Promise<string> {
  const bundled = await build({
    entryPoints: [resolve(import.meta.dirname, '../web/apps/host.ts')],
    bundle: true,
    write: false,
    format: 'iife',
    logLevel: 'silent',
  });
  return bundled.outputFiles[0]?.text ?? '';
}

/** The view's HTML, as the server serves it. */
export async function readView(client: Client): Promise<string> {
  const read = await client.readResource({ uri: VIEW });
  return (read.contents[0] as { text: string }).text;
}

export interface ShownView {
  readonly page: Page;
  readonly view: Frame;
  /** Hand the view the call's arguments, as a host does once the model made the call. */
  input(args: Record<string, unknown>): Promise<void>;
  /** Hand the view the call's result. */
  result(result: unknown): Promise<void>;
}

/**
 * A host page showing the view of a `tool` call, its tool calls made by `client`; `problems`
 * collects CSP refusals and dialogs. Resolves once the view has initialized.
 */
export async function showView(
  browser: Browser,
  parts: { readonly host: string; readonly html: string; readonly client: Client },
  tool: string,
  problems: string[],
): Promise<ShownView> {
  const page = await browser.newPage({ viewport: { width: 800, height: 1000 } });
  page.on('console', (message) => {
    if (/Content Security Policy|Refused to/i.test(message.text())) problems.push(message.text());
  });
  page.on('dialog', (dialog) => {
    problems.push(`a dialog opened: ${dialog.message()}`);
    void dialog.dismiss();
  });
  await page.exposeFunction('hostCallTool', (params: { name: string; arguments?: Record<string, unknown> }) =>
    parts.client.callTool(params),
  );
  await page.setContent('<!doctype html><html><body></body></html>');
  await page.addScriptTag({ content: parts.host });
  await page.evaluate((shown) => (globalThis as never as Host).openView(shown.html, shown.tool), {
    html: parts.html,
    tool,
  });
  const view = page.frames().find((frame) => frame !== page.mainFrame());
  if (!view) throw new Error('no view frame');
  const send = (method: 'sendInput' | 'sendResult', value: unknown) =>
    page.evaluate((sent) => (globalThis as never as Host)[sent.method](sent.value), { method, value });
  return {
    page,
    view,
    input: (args) => send('sendInput', args),
    result: (value) => send('sendResult', value),
  };
}
