// The script library belongs to the principal that saves into it (one
// principal must not read or replace another's scripts): over serve --http each principal's save_script, get_script,
// list_scripts, search_scripts and run_script see only its own library; another's script is
// NOT_FOUND like an unknown one, and a same-named save never replaces it. A principal named `..`
// reaches nothing outside its own folder. Stdio (principal `local`) keeps the library from before
// principals existed, in place and in its old layout.
import { existsSync, mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Client } from '@modelcontextprotocol/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectHttp, type HttpServer, startHttp } from '../helpers/http.js';
import { callTool, startServer, tempDir } from '../helpers/server.js';

type Value = Record<string, unknown> & { code?: string; error?: string; stdout?: string };
interface Listed {
  scripts: Array<{ name: string }>;
  total_count: number;
}

const TOKENS = {
  alice: 'alice-token-0123456789',
  bob: 'bob-token-0123456789ab',
  '..': 'dotdot-token-0123456789',
};

/** A library as saved before principals existed: one script, index.json without stamps. */
function writeLegacyLibrary(scripts: string): void {
  const metadata = {
    script_id: 'script_0123456789ab',
    name: 'legacy-local',
    description: 'quarterly report from the local operator',
    language: 'python',
    tags: ['report'],
    packages: [],
    created_at: '2026-01-01T00:00:00.000Z',
    updated_at: '2026-01-01T00:00:00.000Z',
    last_run_at: null,
    run_count: 0,
    last_run_success: null,
    source_execution_id: null,
    version: 1,
  };
  mkdirSync(join(scripts, 'legacy-local', 'versions'), { recursive: true });
  writeFileSync(join(scripts, 'legacy-local', 'script.py'), 'print("local")\n');
  writeFileSync(join(scripts, 'legacy-local', 'metadata.json'), JSON.stringify(metadata, null, 2));
  writeFileSync(join(scripts, 'index.json'), JSON.stringify({ version: 1, scripts: [metadata] }, null, 2));
}

const report = (who: string) => ({
  name: 'report',
  description: `quarterly report of ${who}`,
  language: 'python',
  code: `print("${who}")`,
  tags: ['report', who],
});

describe('serve --http: a script library per principal', () => {
  let dir: string;
  let home: string;
  let server: HttpServer;
  const clients: Record<string, Client> = {};
  const call = (who: keyof typeof TOKENS, tool: string, args: Record<string, unknown>) =>
    callTool<Value>(clients[who] as Client, tool, args);

  beforeAll(async () => {
    dir = tempDir();
    home = tempDir();
    writeLegacyLibrary(join(home, 'scripts'));
    const tokens = join(dir, 'tokens.json');
    writeFileSync(tokens, JSON.stringify(TOKENS));
    server = await startHttp({ home, env: { CODEXEC_HTTP_TOKENS: tokens, CODEXEC_POOL_SIZE: '0' } });
    clients.alice = await connectHttp(server.url, TOKENS.alice, 'modern');
    clients.bob = await connectHttp(server.url, TOKENS.bob, 'legacy');
    clients['..'] = await connectHttp(server.url, TOKENS['..'], 'modern');
    const saved = await call('alice', 'save_script', report('alice'));
    expect(saved.value).toMatchObject({ success: true, version: 1 });
  }, 60_000);

  afterAll(async () => {
    for (const client of Object.values(clients)) await client.close();
    await server?.stop();
    rmSync(home, { recursive: true, force: true });
    rmSync(dir, { recursive: true, force: true });
  });

  it('another principal gets NOT_FOUND from get_script and run_script, like an unknown name', async () => {
    for (const who of ['bob', '..'] as const) {
      const got = await call(who, 'get_script', { name: 'report' });
      expect(got.isError).toBe(true);
      expect(got.value.code).toBe('NOT_FOUND');
      const unknown = await call(who, 'get_script', { name: 'no-such-script' });
      expect(got.value.error?.replace('report', 'X')).toBe(
        unknown.value.error?.replace('no-such-script', 'X'),
      );
      const ran = await call(who, 'run_script', { name: 'report' });
      expect(ran.value).toMatchObject({ success: false, code: 'NOT_FOUND' });
      expect((await call(who, 'get_script', { name: 'legacy-local' })).value.code).toBe('NOT_FOUND');
    }
  }, 60_000);

  it('lists and searches show a principal its own scripts only', async () => {
    for (const who of ['bob', '..'] as const) {
      expect((await call(who, 'list_scripts', {})).value).toEqual({ scripts: [], total_count: 0 });
      expect((await call(who, 'list_scripts', { tag: 'report' })).value.total_count).toBe(0);
      for (const query of ['quarterly report', 'alice', 'local']) {
        expect((await call(who, 'search_scripts', { query })).value, query).toEqual({ results: [] });
      }
    }
    const own = (await call('alice', 'list_scripts', {})).value as unknown as Listed;
    expect(own.scripts.map((s) => s.name)).toEqual(['report']);
    const found = (await call('alice', 'search_scripts', { query: 'quarterly report' })).value;
    expect((found.results as Array<{ name: string }>).map((r) => r.name)).toEqual(['report']);
  }, 60_000);

  it('a same-named save by another principal never replaces the owner’s script', async () => {
    const bobs = await call('bob', 'save_script', report('bob'));
    expect(bobs.value).toMatchObject({ success: true, version: 1, pruned_versions: 0 });
    expect((await call('bob', 'run_script', { name: 'report' })).value.stdout).toBe('bob\n');
    const alices = await call('alice', 'run_script', { name: 'report' });
    expect(alices.value).toMatchObject({ success: true, stdout: 'alice\n' });
    const got = await call('alice', 'get_script', { name: 'report' });
    expect(got.value).toMatchObject({
      code: 'print("alice")',
      version: 1,
      earlier_versions: 0,
      run_count: 1,
    });
    const search = await call('alice', 'search_scripts', { query: 'bob' });
    expect(search.value).toEqual({ results: [] });
    expect((await call('bob', 'get_script', { name: 'report' })).value.run_count).toBe(1);
  }, 60_000);

  it('keeps each principal’s files in a folder of its own, the local library untouched', () => {
    const scripts = join(home, 'scripts');
    expect(readdirSync(scripts).sort()).toEqual(['.principals', 'index.json', 'legacy-local']);
    const folders = readdirSync(join(scripts, '.principals'));
    expect(folders).toHaveLength(2); // alice and bob saved; `..` only read
    for (const folder of folders) {
      expect(folder).toMatch(/^p_[A-Za-z0-9_-]+$/);
      expect(existsSync(join(scripts, '.principals', folder, 'report', 'script.py'))).toBe(true);
    }
  });

  it('stdio (principal local) still has its library from before, and nothing of the others', async () => {
    for (const [who, client] of Object.entries(clients)) {
      await client.close();
      delete clients[who];
    }
    await server.stop();
    const stdio = await startServer({ home, env: { CODEXEC_POOL_SIZE: '0' } });
    try {
      const listed = (await callTool<Listed>(stdio.client, 'list_scripts', {})).value;
      expect(listed.scripts.map((s) => s.name)).toEqual(['legacy-local']);
      const ran = await callTool<Value>(stdio.client, 'run_script', { name: 'legacy-local' });
      expect(ran.value).toMatchObject({ success: true, stdout: 'local\n' });
      expect((await callTool<Value>(stdio.client, 'get_script', { name: 'report' })).value.code).toBe(
        'NOT_FOUND',
      );
      const search = await callTool<Value>(stdio.client, 'search_scripts', { query: 'alice bob' });
      expect(search.value).toEqual({ results: [] });
    } finally {
      await stdio.close();
    }
  }, 60_000);
});
