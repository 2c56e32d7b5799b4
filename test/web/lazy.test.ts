// The dashboard costs nothing until used (a stdio server never pays for it): serve --http loads src/web only on the first
// request for the page or its API, and stdio never loads it. Every module either process
// loads is recorded by a preloaded hook (test/helpers/module-log.ts).
import { existsSync, rmSync } from 'node:fs';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { connectHttp, startHttp } from '../helpers/http.js';
import { logEnv, logged } from '../helpers/module-log.js';
import { callTool, startServer, tempDir } from '../helpers/server.js';

const TOKEN = 'lazy-token-0123456789ab';
const dirs: string[] = [];

function recorder(): { env: Record<string, string>; loaded: () => string[] } {
  const dir = tempDir();
  dirs.push(dir);
  const { path, env } = logEnv(dir);
  return { env, loaded: () => (existsSync(path) ? logged(path) : []) };
}

const web = (urls: string[]) => urls.filter((url) => url.includes('/dist/web/'));

describe('the dashboard is loaded on first use only', () => {
  afterEach(() => {
    for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  });

  it('serve --http: not while serving MCP, then on the first /api request', async () => {
    const { env, loaded } = recorder();
    const server = await startHttp({ env: { ...env, CODEXEC_HTTP_TOKEN: TOKEN } });
    try {
      const client = await connectHttp(server.url, TOKEN, 'legacy');
      const run = await callTool<{ stdout: string }>(client, 'execute_code', {
        language: 'bash',
        code: 'echo hi',
      });
      expect(run.value.stdout).toBe('hi\n');
      await client.close();
      expect(loaded().some((url) => url.includes('/dist/server/http/serve.js'))).toBe(true);
      expect(web(loaded())).toEqual([]);
      const me = await fetch(new URL('/api/me', server.url), {
        headers: { authorization: `Bearer ${TOKEN}` },
      });
      expect(await me.json()).toEqual({ principal: 'default', admin: false, approver: false });
      expect(web(loaded())).toContain(
        pathToFileURL(resolve(import.meta.dirname, '../../dist/web/index.js')).href,
      );
    } finally {
      await server.stop();
      rmSync(server.home, { recursive: true, force: true });
    }
  }, 30_000);

  it('stdio: never', async () => {
    const { env, loaded } = recorder();
    const server = await startServer({ env });
    try {
      const run = await callTool<{ stdout: string }>(server.client, 'execute_code', {
        language: 'bash',
        code: 'echo hi',
      });
      expect(run.value.stdout).toBe('hi\n');
      expect(loaded().some((url) => url.includes('/dist/server/stdio.js'))).toBe(true);
      expect(web(loaded())).toEqual([]);
    } finally {
      await server.close();
    }
  }, 30_000);
});
