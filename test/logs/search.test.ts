// search_execution_logs through the real server: every filter, combinations, limit and total_count.
import { rmSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { callTool, ERAS, startServer, type TestServer, tempDir } from '../helpers/server.js';
import { ids, KEEP_ALL, oneshot, search, writeOneshots, writeSession } from './fixtures.js';

const id = (n: number) => `exec_${String(n).padStart(12, '0')}`;
const SESSION = 'sess_aaaaaaaaaaaa';
const LONG_CODE = `# ${'x'.repeat(300)}\nprint("long")`;

function seed(home: string): void {
  writeOneshots(home, [
    {
      id: id(1),
      at: '2026-02-01T10:00:00Z',
      code: 'import pandas as pd\nprint(pd.__version__)',
      stdout: '2.2.1',
    },
    {
      id: id(2),
      at: '2026-02-05T10:15:00Z',
      code: 'import pandas as pd\ndf = pd.read_csv("data.csv")',
      stderr: "Traceback (most recent call last):\nModuleNotFoundError: No module named 'pandas'\n",
      exit_code: 1,
    },
    {
      id: id(3),
      at: '2026-02-06T08:00:00Z',
      language: 'node',
      code: 'console.log("hello world")',
      stdout: 'hello world\n',
    },
    {
      id: id(4),
      at: '2026-02-07T09:00:00Z',
      language: 'bash',
      code: 'sleep 100',
      exit_code: null,
      timed_out: true,
      stderr: '\n[codexec: timed out after 1000 ms; process killed]\n',
    },
    {
      id: id(5),
      at: '2026-02-08T12:00:00Z',
      language: 'node',
      code: 'throw new Error("boom")',
      stderr: 'Error: boom\n    at file.mjs:1:7\n',
      exit_code: 1,
    },
    { id: id(6), at: '2026-02-09T14:30:01.123Z', language: 'typescript', code: LONG_CODE, stdout: '42\n' },
    {
      id: id(10),
      at: '2026-02-10T00:00:00Z',
      code: 'print("Processed 150 rows")',
      stdout: 'Processed 150 rows\n',
      script_name: 'parse-excel-report',
    },
  ]);
  writeSession(home, SESSION, 'python', [
    { id: id(7), at: '2026-02-09T15:00:00Z', code: 'import pandas as pd' },
    { id: id(8), at: '2026-02-09T15:01:00Z', code: 'print(df.describe())', stdout: 'mean 50.5\n' },
    { id: id(9), at: '2026-02-09T15:02:00Z', code: 'df.plot()', exit_code: 1 },
  ]);
  // 25 fillers on one day, for the default limit.
  writeOneshots(
    home,
    Array.from({ length: 25 }, (_, i) => ({
      id: id(100 + i),
      at: `2026-01-15T10:${String(i).padStart(2, '0')}:00Z`,
      language: 'bash',
      code: `echo filler ${i}`,
    })),
  );
}

describe.each(ERAS)('search_execution_logs (%s era)', (era) => {
  let server: TestServer;
  const real: Record<string, string> = {};

  beforeAll(async () => {
    const home = tempDir();
    seed(home);
    server = await startServer({ era, home, env: KEEP_ALL });
    const run = async (name: string, args: Record<string, unknown>) => {
      const { value } = await callTool<{ execution_id: string }>(server.client, 'execute_code', args);
      real[name] = value.execution_id;
    };
    await run('ok', { language: 'python', code: 'print("zebra_marker")' });
    await run('fail', { language: 'python', code: 'raise ValueError("giraffe_problem")' });
    await run('slow', { language: 'bash', code: 'echo started; sleep 30', timeout_ms: 300 });
  });
  afterAll(async () => {
    await server.close();
    rmSync(server.home, { recursive: true, force: true });
  });

  it('returns everything newest first, with the seed fields', async () => {
    const page = await search(server.client, { limit: 500 });
    expect(page.total_count).toBe(38);
    const times = page.results.map((r) => Date.parse(r.executed_at));
    expect(times).toEqual([...times].sort((a, b) => b - a));
    expect(page.results.slice(0, 3).map((r) => r.execution_id)).toEqual([real.slow, real.fail, real.ok]);
    expect(page.results.find((r) => r.execution_id === id(2))).toEqual({
      execution_id: id(2),
      session_id: null,
      language: 'python',
      code_preview: 'import pandas as pd\ndf = pd.read_csv("data.csv")',
      status: 'failed',
      exit_code: 1,
      error_preview: "ModuleNotFoundError: No module named 'pandas'",
      duration_ms: 12,
      executed_at: '2026-02-05T10:15:00Z',
      script_name: null,
    });
    const long = page.results.find((r) => r.execution_id === id(6));
    expect(long?.code_preview).toBe(LONG_CODE.slice(0, 200));
    expect(long?.error_preview).toBeNull();
  });

  it('finds real runs by status with their error preview', async () => {
    const timeout = await search(server.client, { status: 'timeout' });
    expect(timeout.results.map((r) => r.execution_id)).toEqual([real.slow, id(4)]);
    expect(timeout.results[0]).toMatchObject({ language: 'bash', exit_code: null, status: 'timeout' });
    expect(timeout.results[0]?.error_preview).toMatch(/timed out after 300 ms/);
    const failed = await ids(server.client, { status: 'failed' });
    expect(failed).toEqual([real.fail, id(9), id(5), id(2)]);
    const fail = (await search(server.client, { query: 'giraffe_problem' })).results;
    expect(fail).toHaveLength(1);
    expect(fail[0]).toMatchObject({ execution_id: real.fail, status: 'failed', exit_code: 1 });
    expect(fail[0]?.error_preview).toMatch(/ValueError: giraffe_problem/);
    const success = await search(server.client, { status: 'success', limit: 500 });
    expect(success.total_count).toBe(38 - 4 - 2);
  });

  it('filters by language, including session entries without a language field', async () => {
    expect(await ids(server.client, { language: 'python' })).toEqual([
      real.fail,
      real.ok,
      id(10),
      id(9),
      id(8),
      id(7),
      id(2),
      id(1),
    ]);
    expect(await ids(server.client, { language: 'node' })).toEqual([id(5), id(3)]);
    expect(await ids(server.client, { language: 'typescript' })).toEqual([id(6)]);
    expect((await search(server.client, { language: 'bash' })).total_count).toBe(27);
  });

  it('searches code, stdout and stderr as words and word prefixes', async () => {
    expect(await ids(server.client, { query: 'pandas' })).toEqual([id(7), id(2), id(1)]);
    expect(await ids(server.client, { query: 'ModuleNotFound' })).toEqual([id(2)]);
    expect(await ids(server.client, { query: 'read_csv' })).toEqual([id(2)]);
    expect(await ids(server.client, { query: 'hello world' })).toEqual([id(3)]);
    expect(await ids(server.client, { query: 'HELLO' })).toEqual([id(3)]);
    expect(await ids(server.client, { query: 'mean' })).toEqual([id(8)]); // stdout
    expect(await ids(server.client, { query: 'boom' })).toEqual([id(5)]); // code and stderr
    expect(await ids(server.client, { query: 'zebra_marker' })).toEqual([real.ok]);
    expect(await ids(server.client, { query: 'pandas "nonexistentword"' })).toEqual([]);
    expect(await ids(server.client, { query: 'AND OR NOT ( pandas' })).toEqual([]);
    expect(await ids(server.client, { query: 'pd.read_csv(' })).toEqual([id(2)]);
  });

  it('filters by since (a date, or a date-time; no zone means UTC)', async () => {
    const synthetic = (list: string[]) => list.filter((x) => !Object.values(real).includes(x));
    expect(synthetic(await ids(server.client, { since: '2026-02-08' }))).toEqual([
      id(10),
      id(9),
      id(8),
      id(7),
      id(6),
      id(5),
    ]);
    expect(synthetic(await ids(server.client, { since: '2026-02-09T14:30:01.123Z' }))).toEqual([
      id(10),
      id(9),
      id(8),
      id(7),
      id(6),
    ]);
    expect(synthetic(await ids(server.client, { since: '2026-02-09T15:00:30' }))).toEqual([
      id(10),
      id(9),
      id(8),
    ]);
    expect(synthetic(await ids(server.client, { since: '2026-02-09T17:00:30+02:00' }))).toEqual([
      id(10),
      id(9),
      id(8),
    ]);
    expect(await ids(server.client, { since: '2099-01-01' })).toEqual([]);
  });

  it('filters by session', async () => {
    const page = await search(server.client, { session_id: SESSION });
    expect(page.results.map((r) => r.execution_id)).toEqual([id(9), id(8), id(7)]);
    expect(page.results[2]).toMatchObject({
      session_id: SESSION,
      language: 'python',
      status: 'success',
      executed_at: '2026-02-09T15:00:00Z',
      duration_ms: 234,
    });
    expect(await ids(server.client, { session_id: 'sess_unknown00000' })).toEqual([]);
  });

  it("finds a saved script's runs by its name, or by its name's words", async () => {
    const byName = await search(server.client, { script_name: 'parse-excel-report' });
    expect(byName.results.map((r) => [r.execution_id, r.script_name])).toEqual([
      [id(10), 'parse-excel-report'],
    ]);
    expect(await ids(server.client, { query: 'excel report' })).toEqual([id(10)]);
    expect(await ids(server.client, { query: 'parse-excel' })).toEqual([id(10)]);
    expect(await ids(server.client, { script_name: 'parse-excel' })).toEqual([]); // a name, whole
    expect(await ids(server.client, { script_name: 'parse-excel-report', status: 'failed' })).toEqual([]);
  });

  it('combines filters', async () => {
    expect(await ids(server.client, { language: 'python', status: 'failed' })).toEqual([
      real.fail,
      id(9),
      id(2),
    ]);
    expect(await ids(server.client, { language: 'python', query: 'pandas', since: '2026-02-02' })).toEqual([
      id(7),
      id(2),
    ]);
    expect(await ids(server.client, { status: 'success', session_id: SESSION })).toEqual([id(8), id(7)]);
    expect(await ids(server.client, { language: 'node', status: 'failed', query: 'boom' })).toEqual([id(5)]);
    expect(await ids(server.client, { language: 'node', status: 'success', query: 'boom' })).toEqual([]);
    expect(
      await ids(server.client, {
        language: 'python',
        status: 'success',
        query: 'pandas',
        since: '2026-02-09',
        session_id: SESSION,
      }),
    ).toEqual([id(7)]);
    expect(await ids(server.client, { language: 'bash', status: 'timeout', since: '2026-02-07' })).toEqual([
      real.slow,
      id(4),
    ]);
  });

  it('counts every match before limit; default limit is 20', async () => {
    const first = await search(server.client, { query: 'filler' });
    expect(first.total_count).toBe(25);
    expect(first.results).toHaveLength(20);
    expect(first.results[0]?.execution_id).toBe(id(124));
    const two = await search(server.client, { query: 'filler', limit: 2 });
    expect(two.total_count).toBe(25);
    expect(two.results.map((r) => r.execution_id)).toEqual([id(124), id(123)]);
    const none = await search(server.client, { query: 'filler', since: '2026-02-01' });
    expect(none).toEqual({ results: [], total_count: 0 });
    expect((await search(server.client, { limit: 1 })).total_count).toBe(38);
  });

  it('refuses bad filters with INVALID_INPUT and keeps serving', async () => {
    for (const args of [
      { limit: 0 },
      { limit: 501 },
      { limit: 2.5 },
      { status: 'crashed' },
      { language: 'cobol' },
      { since: 'yesterday' },
      { since: '2026-13-45' },
      { query: '->' },
      { query: '' },
    ]) {
      const call = await callTool(server.client, 'search_execution_logs', args);
      expect(call.isError, JSON.stringify(args)).toBe(true);
      expect(call.value).toMatchObject({ success: false, code: 'INVALID_INPUT' });
    }
    expect((await search(server.client, { limit: 500 })).results).toHaveLength(38);
  });

  it('stores the seed entry format on disk and never indexes a run twice', async () => {
    expect(oneshot({ id: 'x', at: '2026-01-01T00:00:00Z' })).toHaveProperty('artifacts.created');
    const all = await ids(server.client);
    expect(new Set(all).size).toBe(all.length);
  });
});
