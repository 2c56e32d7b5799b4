// Two servers sharing one CODEXEC_HOME, writing and searching at once.

import { readdirSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import type Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { callTool, startServer, type TestServer, tempDir } from '../helpers/server.js';
import { appendLines, ids, KEEP_ALL, logDir, search } from './fixtures.js';

const Sqlite = createRequire(import.meta.url)('better-sqlite3') as typeof Database;
const RUNS = 12;

describe('two servers sharing a home', () => {
  const home = tempDir();
  const servers: TestServer[] = [];
  afterAll(async () => {
    await Promise.all(servers.map((s) => s.close()));
    rmSync(home, { recursive: true, force: true });
  });

  it('index every run once, see each other’s runs, and keep log and index intact', async () => {
    const [a, b] = await Promise.all([
      startServer({ home, env: KEEP_ALL }),
      startServer({ home, env: KEEP_ALL }),
    ]);
    if (!a || !b) throw new Error('servers did not start');
    servers.push(a, b);
    // Both open the (not yet existing) index at the same moment.
    await Promise.all([search(a.client), search(b.client)]);

    const big = 'y'.repeat(200_000); // one large line each: appends must not interleave
    const runOn = async (server: TestServer, tag: string, i: number) => {
      const code = i === 0 ? `echo ${tag}_${i}; echo ${big} >/dev/null` : `echo ${tag}_${i}`;
      const { value } = await callTool<{ execution_id: string }>(server.client, 'execute_code', {
        language: 'bash',
        code,
      });
      if (i % 3 === 0) await search(server.client, { query: tag });
      return value.execution_id;
    };
    const runs = await Promise.all([
      ...Array.from({ length: RUNS }, (_, i) => runOn(a, 'alpha', i)),
      ...Array.from({ length: RUNS }, (_, i) => runOn(b, 'beta', i)),
      // A third writer appending directly, as a session manager in either process would.
      (async () => {
        for (let i = 0; i < RUNS; i++) {
          appendLines(home, `session-sess_cccccccccccc.jsonl`, [
            {
              type: 'execution',
              execution_id: `exec_c${String(i).padStart(11, '0')}`,
              session_id: 'sess_cccccccccccc',
              code: `gamma_${i}`,
              stdout: '',
              stderr: '',
              exit_code: 0,
              duration_ms: 1,
              at: new Date().toISOString(),
            },
          ]);
          await new Promise((resolve) => setTimeout(resolve, 20));
        }
        return 'direct';
      })(),
    ]);
    const executed = runs.filter((id) => id !== 'direct').sort();
    const direct = Array.from({ length: RUNS }, (_, i) => `exec_c${String(i).padStart(11, '0')}`);
    const everything = [...executed, ...direct].sort();

    // Every JSONL line of the execution logs is whole and appears once (the audit files beside
    // them have their own entries).
    const lines = readdirSync(logDir(home))
      .filter((name) => /^(executions|session)-.*\.jsonl$/.test(name))
      .flatMap((name) =>
        readFileSync(join(logDir(home), name), 'utf8')
          .split('\n')
          .filter(Boolean),
      );
    const written = lines.map((line) => (JSON.parse(line) as { execution_id: string }).execution_id).sort();
    expect(written).toEqual(everything);

    // Each server sees all runs of both, exactly once. Another process's lines reach a search
    // within a rescan (RESCAN_MS, 1 s); a get of one not yet indexed rescans at once, but the last
    // direct line may already be in while the other server's last runs are not (a loaded machine).
    for (const server of [a, b]) {
      const got = await callTool(server.client, 'get_execution_log', { execution_id: direct[RUNS - 1] });
      expect(got.isError).toBe(false);
      await expect
        .poll(async () => (await ids(server.client)).sort(), { timeout: 5000, interval: 250 })
        .toEqual(everything);
      expect((await search(server.client, { limit: 1 })).total_count).toBe(everything.length);
      expect((await search(server.client, { query: 'alpha' })).total_count).toBe(RUNS);
      expect((await search(server.client, { query: 'beta' })).total_count).toBe(RUNS);
    }
    await Promise.all(servers.splice(0).map((s) => s.close()));
    const db = new Sqlite(join(home, 'index.db'), { readonly: true });
    try {
      expect(db.pragma('integrity_check', { simple: true })).toBe('ok');
      expect(db.prepare('SELECT count(*) FROM executions').pluck().get()).toBe(everything.length);
    } finally {
      db.close();
    }
    // And a fresh server agrees.
    const c = await startServer({ home, env: KEEP_ALL });
    servers.push(c);
    expect((await ids(c.client)).sort()).toEqual(everything);
  });
});
