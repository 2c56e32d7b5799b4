// The index is derived: corrupt lines are skipped, a deleted or damaged index.db is rebuilt, and a
// restart picks up whatever was written to the JSONL while no index was watching.
import { existsSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { callTool, startServer, type TestServer, tempDir } from '../helpers/server.js';
import { appendLines, ids, KEEP_ALL, oneshot, search, writeOneshots } from './fixtures.js';

const homes: string[] = [];
const servers: TestServer[] = [];

function home(): string {
  const dir = tempDir();
  homes.push(dir);
  return dir;
}

async function start(dir: string): Promise<TestServer> {
  const server = await startServer({ home: dir, env: KEEP_ALL });
  servers.push(server);
  return server;
}

afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
  for (const dir of homes.splice(0)) rmSync(dir, { recursive: true, force: true });
});

async function run(server: TestServer, code: string): Promise<string> {
  const { value } = await callTool<{ execution_id: string }>(server.client, 'execute_code', {
    language: 'bash',
    code,
  });
  return value.execution_id;
}

describe('execution log durability', () => {
  it('skips corrupt JSONL lines with a warning and still serves the rest', async () => {
    const dir = home();
    appendLines(dir, 'executions-2026-03-01.jsonl', [
      oneshot({ id: 'exec_aaaaaaaaaaa1', at: '2026-03-01T10:00:00Z', code: 'print("before")' }),
      '{"type":"execution","execution_id":"exec_torn", "code": "pri',
      'not json at all',
      JSON.stringify({
        type: 'execution',
        execution_id: 'exec_badtypes',
        exit_code: 'zero',
        executed_at: 'x',
      }),
      '[1,2,3]',
      '',
      JSON.stringify({
        type: 'session_end',
        session_id: 'sess_1',
        reason: 'closed',
        at: '2026-03-01T10:00:00Z',
      }),
      oneshot({ id: 'exec_aaaaaaaaaaa2', at: '2026-03-01T11:00:00Z', code: 'print("after")' }),
    ]);
    const server = await start(dir);
    expect(await ids(server.client)).toEqual(['exec_aaaaaaaaaaa2', 'exec_aaaaaaaaaaa1']);
    const got = await callTool(server.client, 'get_execution_log', { execution_id: 'exec_aaaaaaaaaaa2' });
    expect(got.value).toMatchObject({ code: 'print("after")' });
    // stderr is a separate pipe: its lines may arrive just after the answer.
    await vi.waitFor(() => expect(server.stderr().match(/skipped a corrupt line/g)).toHaveLength(4));
    expect(server.stderr()).toMatch(
      /executions-2026-03-01\.jsonl: skipped a corrupt line at byte \d+ \(not valid JSON\)/,
    );
    // Appends after the bad lines are indexed too, and a torn line is never re-reported.
    const fresh = await run(server, 'echo fresh');
    expect((await ids(server.client))[0]).toBe(fresh);
    expect(server.stderr().match(/skipped a corrupt line/g)).toHaveLength(4);
  });

  it('rebuilds a deleted index.db from the JSONL', async () => {
    const dir = home();
    writeOneshots(dir, [{ id: 'exec_bbbbbbbbbbb1', at: '2026-03-02T10:00:00Z' }]);
    const first = await start(dir);
    const ran = await run(first, 'echo one');
    expect(await ids(first.client)).toEqual([ran, 'exec_bbbbbbbbbbb1']);
    await first.close();
    expect(existsSync(join(dir, 'index.db'))).toBe(true);
    for (const suffix of ['', '-wal', '-shm']) rmSync(join(dir, `index.db${suffix}`), { force: true });

    const second = await start(dir);
    expect(await ids(second.client)).toEqual([ran, 'exec_bbbbbbbbbbb1']);
    expect(existsSync(join(dir, 'index.db'))).toBe(true);

    // Deleted while the server runs: it notices, switches to a fresh index and refills it.
    for (const suffix of ['', '-wal', '-shm']) rmSync(join(dir, `index.db${suffix}`), { force: true });
    const after = await run(second, 'echo after');
    expect(await ids(second.client)).toEqual([after, ran, 'exec_bbbbbbbbbbb1']);
    expect(existsSync(join(dir, 'index.db'))).toBe(true);
    await vi.waitFor(() => expect(second.stderr()).toMatch(/index\.db was removed or replaced/));
  });

  it('rebuilds a damaged index.db (garbage header, or a damaged schema page)', async () => {
    const dir = home();
    writeOneshots(dir, [{ id: 'exec_ccccccccccc1', at: '2026-03-03T10:00:00Z', code: 'print("kept")' }]);
    const first = await start(dir);
    const ran = await run(first, 'echo two');
    expect(await ids(first.client)).toHaveLength(2);
    await first.close();
    const db = join(dir, 'index.db');
    // Damage the main file only (pages still in a WAL left by an unclean exit would mask it).
    const damage = (bytes: Buffer) => {
      writeFileSync(db, bytes);
      for (const suffix of ['-wal', '-shm']) rmSync(`${db}${suffix}`, { force: true });
    };
    damage(Buffer.alloc(statSync(db).size, 0x5a));

    const second = await start(dir);
    expect(await ids(second.client)).toEqual([ran, 'exec_ccccccccccc1']);
    await vi.waitFor(() => expect(second.stderr()).toMatch(/damaged/));
    await second.close();

    // Keep the 100-byte header, wreck the rest of the first pages.
    const bytes = readFileSync(db);
    bytes.fill(0xa5, 100, Math.min(bytes.length, 8192));
    damage(bytes);
    const third = await start(dir);
    expect(await ids(third.client, { query: 'kept' })).toEqual(['exec_ccccccccccc1']);
    await vi.waitFor(() => expect(third.stderr()).toMatch(/damaged/));
  });

  it('picks up entries written while no server (no index) was running', async () => {
    const dir = home();
    const first = await start(dir);
    const ran = await run(first, 'echo first');
    expect(await ids(first.client)).toEqual([ran]);
    await first.close();

    // Another tool (or an older codexec) appends to today's file and adds new files.
    const today = new Date().toISOString().slice(0, 10);
    const later = new Date(Date.now() + 1000).toISOString();
    appendLines(dir, `executions-${today}.jsonl`, [
      oneshot({ id: 'exec_ddddddddddd1', at: later, code: 'echo appended' }),
    ]);
    writeOneshots(dir, [{ id: 'exec_ddddddddddd2', at: '2026-03-04T10:00:00Z', code: 'echo older' }]);
    appendLines(dir, 'session-sess_dddddddddddd.jsonl', [
      { type: 'session_start', session_id: 'sess_dddddddddddd', language: 'bash', started_at: later },
      {
        type: 'execution',
        execution_id: 'exec_ddddddddddd3',
        session_id: 'sess_dddddddddddd',
        code: 'x=1',
        stdout: '',
        stderr: '',
        exit_code: 0,
        duration_ms: 3,
        at: later,
      },
    ]);

    const second = await start(dir);
    expect((await ids(second.client)).sort()).toEqual(
      [ran, 'exec_ddddddddddd1', 'exec_ddddddddddd2', 'exec_ddddddddddd3'].sort(),
    );
    expect(await ids(second.client, { language: 'bash', session_id: 'sess_dddddddddddd' })).toEqual([
      'exec_ddddddddddd3',
    ]);
    expect(second.stderr()).not.toMatch(/rebuilding|damaged/);

    // Lines appended by another writer while this server runs: get finds them at once.
    appendLines(dir, `executions-${today}.jsonl`, [oneshot({ id: 'exec_ddddddddddd4', at: later })]);
    const got = await callTool(second.client, 'get_execution_log', { execution_id: 'exec_ddddddddddd4' });
    expect(got.isError).toBe(false);
    expect((await search(second.client, { query: 'appended' })).total_count).toBe(1);
  });

  it('does not open index.db for a server that is only probed', async () => {
    const dir = home();
    const server = await start(dir);
    const tools = await server.client.listTools();
    expect(tools.tools.map((t) => t.name)).toEqual(
      expect.arrayContaining(['search_execution_logs', 'get_execution_log']),
    );
    await server.close();
    expect(existsSync(join(dir, 'index.db'))).toBe(false);
    expect(existsSync(join(dir, 'logs'))).toBe(false);
  });
});
