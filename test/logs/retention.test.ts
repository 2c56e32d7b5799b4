// Retention through the real server: exactly the expired entries leave the JSONL and the index.

import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import type Database from 'better-sqlite3';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { callTool, startServer, type TestServer, tempDir } from '../helpers/server.js';
import {
  appendLines,
  DAY_MS,
  dailyFile,
  ids,
  KEEP_ALL,
  logDir,
  oneshot,
  search,
  writeSession,
} from './fixtures.js';

const Sqlite = createRequire(import.meta.url)('better-sqlite3') as typeof Database;
const NOW = Date.now();
const ago = (days: number) => new Date(NOW - days * DAY_MS).toISOString();
const r = (n: number) => `exec_r${String(n).padStart(11, '0')}`;
const CORRUPT = '{"type":"execution","execution_id":"exec_torn","co';

describe('log retention', () => {
  const home = tempDir();
  const servers: TestServer[] = [];
  afterAll(async () => {
    await Promise.all(servers.map((s) => s.close()));
    rmSync(home, { recursive: true, force: true });
  });

  const file = (name: string) => readFileSync(join(logDir(home), name), 'utf8');

  it('deletes exactly the expired entries (30 days success, 90 failure, 90 session)', async () => {
    const line = (e: Parameters<typeof oneshot>[0]) => oneshot({ code: `echo ${e.id}`, ...e });
    appendLines(home, dailyFile(ago(31)), [
      line({ id: r(1), at: ago(31) }), // success, 31 days: expired
      line({ id: r(2), at: ago(31), exit_code: 1, stderr: 'bad\n' }), // failure, 31 days: kept
      CORRUPT, // unreadable: stays while its file lives
    ]);
    appendLines(home, dailyFile(ago(29)), [line({ id: r(3), at: ago(29) })]);
    appendLines(home, dailyFile(ago(89)), [
      line({ id: r(4), at: ago(89), exit_code: 2 }), // failure, 89 days: kept
      line({ id: r(5), at: ago(89) }), // success: expired
    ]);
    appendLines(home, dailyFile(ago(91)), [
      line({ id: r(6), at: ago(91), exit_code: 1 }), // failure, 91 days: expired
      line({ id: r(7), at: ago(91), exit_code: null, timed_out: true }), // timeout, 91 days: expired
    ]);
    appendLines(home, dailyFile(ago(60)), [
      line({ id: r(8), at: ago(60), exit_code: null, timed_out: true }),
    ]);
    appendLines(home, dailyFile(ago(100)), [line({ id: r(9), at: ago(100) })]);
    // Session A's last activity is 91 days old: the whole file goes. B was active 10 days ago: it stays.
    writeSession(home, 'sess_aaaaaaaaaaaa', 'python', [
      { id: r(10), at: ago(95), code: 'a = 1' },
      { id: r(11), at: ago(91), code: 'print(a)', exit_code: 1 },
    ]);
    writeSession(home, 'sess_bbbbbbbbbbbb', 'python', [
      { id: r(12), at: ago(100), code: 'b = 1' },
      { id: r(13), at: ago(10), code: 'print(b)' },
    ]);
    // Not ours: never touched.
    writeFileSync(join(logDir(home), 'notes.txt'), 'keep me\n');
    mkdirSync(join(home, 'scripts', 'old-report'), { recursive: true });
    writeFileSync(join(home, 'scripts', 'old-report', 'script.py'), 'print("saved")\n');
    const before = (name: string) => file(name);
    const untouched = [dailyFile(ago(29)), dailyFile(ago(60)), 'session-sess_bbbbbbbbbbbb.jsonl'].map(
      (name) => [name, before(name)],
    );

    // Indexed first by a server that keeps everything.
    const keeper = await startServer({ home, env: KEEP_ALL });
    servers.push(keeper);
    expect(await ids(keeper.client)).toHaveLength(13);
    await keeper.close();

    // A server with the seed's retention applies it in the background after its first catch-up.
    const server = await startServer({ home });
    servers.push(server);
    const kept = [r(13), r(3), r(2), r(8), r(4), r(12)];
    await vi.waitFor(async () => expect(await ids(server.client)).toEqual(kept), {
      timeout: 10_000,
      interval: 100,
    });
    await vi.waitFor(() =>
      expect(server.stderr()).toMatch(/retention removed 7 expired entries \(3 files deleted, 2 rewritten\)/),
    );

    expect(readdirSync(logDir(home)).sort()).toEqual(
      [
        dailyFile(ago(31)),
        dailyFile(ago(29)),
        dailyFile(ago(89)),
        dailyFile(ago(60)),
        'notes.txt',
        'session-sess_bbbbbbbbbbbb.jsonl',
      ].sort(),
    );
    expect(file(dailyFile(ago(31)))).toBe(
      `${JSON.stringify(line({ id: r(2), at: ago(31), exit_code: 1, stderr: 'bad\n' }))}\n${CORRUPT}\n`,
    );
    expect(file(dailyFile(ago(89)))).toBe(
      `${JSON.stringify(line({ id: r(4), at: ago(89), exit_code: 2 }))}\n`,
    );
    for (const [name, text] of untouched) expect(file(name as string)).toBe(text);
    expect(file('notes.txt')).toBe('keep me\n');
    expect(readFileSync(join(home, 'scripts', 'old-report', 'script.py'), 'utf8')).toBe('print("saved")\n');

    const gone = await callTool(server.client, 'get_execution_log', { execution_id: r(1) });
    expect(gone.value).toMatchObject({ code: 'NOT_FOUND' });
    const kept2 = await callTool(server.client, 'get_execution_log', { execution_id: r(2) });
    expect(kept2.value).toMatchObject({ execution_id: r(2), status: 'failed' });
    expect(await ids(server.client, { query: r(1) })).toEqual([]);
    // Totals (kept per language and status) lost the expired entries too.
    expect((await search(server.client, { limit: 1 })).total_count).toBe(kept.length);
    expect((await search(server.client, { status: 'success', limit: 1 })).total_count).toBe(3);
    expect((await search(server.client, { status: 'timeout', language: 'python' })).total_count).toBe(1);

    // The index itself holds exactly the kept entries, in both tables.
    await server.close();
    const db = new Sqlite(join(home, 'index.db'), { readonly: true });
    try {
      const rows = db.prepare('SELECT execution_id FROM executions ORDER BY execution_id').pluck().all();
      expect(rows).toEqual([...kept].sort());
      expect(db.prepare('SELECT count(*) FROM executions_fts').pluck().get()).toBe(kept.length);
    } finally {
      db.close();
    }
  });
});
