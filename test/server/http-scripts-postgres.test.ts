// The script library shared by replicas: two real `serve --http` processes with homes
// of their own and one CODEXEC_STORE. A script saved through one is listed, searched, run and
// versioned through the other; another principal sees it through neither; nothing lands on disk.
import { randomBytes } from 'node:crypto';
import { existsSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Client } from '@modelcontextprotocol/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectHttp, type HttpServer, startHttp } from '../helpers/http.js';
import { startPostgres, type TestPostgres } from '../helpers/postgres.js';
import { callTool, tempDir } from '../helpers/server.js';

type Value = Record<string, unknown> & { code?: string; error?: string; stdout?: string };

const TOKENS = { alice: 'alice-token-0123456789', bob: 'bob-token-0123456789ab' };
type Who = keyof typeof TOKENS;

const report = (who: string, line = who) => ({
  name: 'report',
  description: `quarterly report of ${who}`,
  language: 'python',
  code: `print("${line}")`,
  tags: ['report', who],
});

describe('serve --http replicas on one PostgreSQL: one script library', () => {
  let cluster: TestPostgres;
  let dir: string;
  const servers: HttpServer[] = [];
  const clients = new Map<string, Client>();
  /** `who` calling `tool` through replica `replica` (0 or 1). */
  const call = (replica: number, who: Who, tool: string, args: Record<string, unknown>) =>
    callTool<Value>(clients.get(`${replica}:${who}`) as Client, tool, args);

  beforeAll(async () => {
    cluster = await startPostgres();
    const store = await cluster.createDatabase('replicas');
    dir = tempDir();
    const tokens = join(dir, 'tokens.json');
    writeFileSync(tokens, JSON.stringify(TOKENS));
    const key = join(dir, 'approval.key');
    writeFileSync(key, randomBytes(32), { mode: 0o600 });
    for (const name of ['one', 'two']) {
      const home = join(dir, name);
      const env = {
        CODEXEC_HTTP_TOKENS: tokens,
        CODEXEC_POOL_SIZE: '0',
        CODEXEC_STORE: store,
        CODEXEC_APPROVAL_KEY_FILE: key,
      };
      servers.push(await startHttp({ home, env }));
    }
    for (const [replica, server] of servers.entries())
      for (const who of Object.keys(TOKENS) as Who[])
        clients.set(
          `${replica}:${who}`,
          await connectHttp(server.url, TOKENS[who], replica ? 'legacy' : 'modern'),
        );
  }, 120_000);

  afterAll(async () => {
    for (const client of clients.values()) await client.close();
    for (const server of servers) await server.stop();
    await cluster?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('a script saved through one replica is listed, searched, run and counted through the other', async () => {
    const saved = await call(0, 'alice', 'save_script', report('alice'));
    expect(saved.value).toMatchObject({ success: true, version: 1, path: 'postgres:report/script.py' });
    const listed = await call(1, 'alice', 'list_scripts', {});
    expect(listed.value).toMatchObject({ total_count: 1, scripts: [{ name: 'report' }] });
    const found = await call(1, 'alice', 'search_scripts', { query: 'quarterly report' });
    expect((found.value.results as Array<{ name: string }>).map((r) => r.name)).toEqual(['report']);
    const ran = await call(1, 'alice', 'run_script', { name: 'report' });
    expect(ran.value).toMatchObject({ success: true, stdout: 'alice\n' });
    const got = await call(0, 'alice', 'get_script', { name: 'report' });
    expect(got.value).toMatchObject({ code: 'print("alice")', run_count: 1, last_run_success: true });
  }, 60_000);

  it('another principal sees it through neither replica, and its same-named save is its own', async () => {
    for (const replica of [0, 1]) {
      const got = await call(replica, 'bob', 'get_script', { name: 'report' });
      expect(got.value).toMatchObject({ success: false, code: 'NOT_FOUND' });
      expect((await call(replica, 'bob', 'run_script', { name: 'report' })).value.code).toBe('NOT_FOUND');
      expect((await call(replica, 'bob', 'list_scripts', {})).value).toEqual({ scripts: [], total_count: 0 });
      expect((await call(replica, 'bob', 'search_scripts', { query: 'alice report' })).value).toEqual({
        results: [],
      });
    }
    const bobs = await call(1, 'bob', 'save_script', report('bob'));
    expect(bobs.value).toMatchObject({ success: true, version: 1 });
    expect((await call(0, 'bob', 'run_script', { name: 'report' })).value.stdout).toBe('bob\n');
    const alices = await call(0, 'alice', 'get_script', { name: 'report' });
    expect(alices.value).toMatchObject({ code: 'print("alice")', version: 1, run_count: 1 });
  }, 60_000);

  it('a new version saved through the second replica is the one the first runs; the old one kept', async () => {
    const saved = await call(1, 'alice', 'save_script', report('alice', 'alice v2'));
    expect(saved.value).toMatchObject({ success: true, version: 2, pruned_versions: 0 });
    expect((await call(0, 'alice', 'run_script', { name: 'report' })).value.stdout).toBe('alice v2\n');
    const current = await call(0, 'alice', 'get_script', { name: 'report' });
    expect(current.value).toMatchObject({ version: 2, earlier_versions: 1, run_count: 2 });
    const first = await call(0, 'alice', 'get_script', { name: 'report', version: 1 });
    expect(first.value).toMatchObject({ code: 'print("alice")', code_version: 1 });
  }, 60_000);

  it('keeps nothing of the library in either home', () => {
    for (const server of servers) {
      const scripts = join(server.home, 'scripts');
      const entries = existsSync(scripts) ? readdirSync(scripts) : [];
      expect(entries.filter((e) => e !== 'index.json')).toEqual([]);
    }
  });
});
