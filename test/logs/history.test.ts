// ExecutionLogs in-process: the index against the JSONL at byte level, and retention vs appends.
import { appendFileSync, existsSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setImmediate as yieldToLoop } from 'node:timers/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { type ExecutionLogEntry, ExecutionLogs, parseSince } from '../../src/logs/index.js';
import { ftsExpression } from '../../src/logs/sqlite/search.js';
import { MAX_LOGGED_CODE_CHARS } from '../../src/logs/writer.js';
import { tempDir } from '../helpers/server.js';
import { DAY_MS, oneshot } from './fixtures.js';

const open: ExecutionLogs[] = [];
const dirs: string[] = [];

function logs(days = { success: 30, failure: 90, session: 90 }) {
  const home = tempDir();
  dirs.push(home);
  const history = new ExecutionLogs({
    logDir: join(home, 'logs'),
    indexPath: join(home, 'index.db'),
    retentionDays: days,
  });
  open.push(history);
  return { home, history, dir: join(home, 'logs') };
}

afterEach(async () => {
  await Promise.all(open.splice(0).map((h) => h.close()));
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

const entry = (id: string, at: string) => oneshot({ id, at }) as unknown as ExecutionLogEntry;

const ids = async (history: ExecutionLogs, query?: string) =>
  (await history.search({ limit: 500, ...(query && { query }) })).results.map((r) => r.execution_id);

describe('ExecutionLogs', () => {
  it('waits for a line still being written, then indexes it', async () => {
    const { history, dir } = logs();
    await history.writer.appendExecution(entry('exec_000000000001', '2026-05-01T00:00:00Z'));
    const file = join(dir, 'executions-2026-05-01.jsonl');
    const half = JSON.stringify(oneshot({ id: 'exec_000000000002', at: '2026-05-01T01:00:00Z' }));
    appendFileSync(file, half.slice(0, 40));
    expect(await history.search({ limit: 20 })).toMatchObject({ total_count: 1 });
    appendFileSync(file, `${half.slice(40)}\n`);
    await history.get('exec_000000000002'); // forces a rescan
    expect(await ids(history)).toEqual(['exec_000000000002', 'exec_000000000001']);
  });

  it('starts on a fresh line after a line torn by a crash, losing only the torn one', async () => {
    const { history, dir } = logs();
    const file = join(dir, 'executions-2026-05-04.jsonl');
    const torn = JSON.stringify(oneshot({ id: 'exec_000000000007', at: '2026-05-04T00:00:00Z' })).slice(
      0,
      50,
    );
    await history.writer.appendExecution(entry('exec_000000000008', '2026-05-04T00:00:01Z'));
    appendFileSync(file, torn); // another process died mid-line
    await history.writer.appendExecution(entry('exec_000000000009', '2026-05-04T00:00:02Z'));
    await history.writer.appendExecution(entry('exec_000000000010', '2026-05-04T00:00:03Z'));
    const lines = readFileSync(file, 'utf8').split('\n');
    expect(lines[1]).toBe(torn);
    expect(lines).toHaveLength(5); // 4 lines and the final newline
    expect(await ids(history)).toEqual(['exec_000000000010', 'exec_000000000009', 'exec_000000000008']);
  });

  it.each([
    ['small lines (written synchronously)', 10],
    ['large lines (written through the thread pool)', 200_000],
  ])('starts on a fresh line after a torn one with %s', async (_kind, codeChars) => {
    const { history, dir } = logs();
    const file = join(dir, 'executions-2026-05-06.jsonl');
    const big = (id: string, at: string) =>
      ({ ...oneshot({ id, at }), code: 'x'.repeat(codeChars) }) as unknown as ExecutionLogEntry;
    await history.writer.appendExecution(big('exec_000000000021', '2026-05-06T00:00:01Z'));
    appendFileSync(file, '{"type":"execution","execution_id":"exec_0000000'); // a process died mid-line
    await history.writer.appendExecution(big('exec_000000000022', '2026-05-06T00:00:02Z'));
    const lines = readFileSync(file, 'utf8').split('\n');
    expect(lines).toHaveLength(4); // 3 lines and the final newline
    expect(JSON.parse(lines[2] ?? '').code).toHaveLength(Math.min(codeChars, MAX_LOGGED_CODE_CHARS));
    expect(await ids(history)).toEqual(['exec_000000000022', 'exec_000000000021']);
  });

  it('reads its own writes: a search sees appends still in the queue', async () => {
    const { history } = logs();
    void history.writer.appendExecution(entry('exec_000000000011', '2026-05-05T00:00:00Z'));
    void history.writer.appendSession(
      'sess_000000000011',
      entry('exec_000000000012', '2026-05-05T00:00:01Z'),
    );
    expect(await ids(history)).toEqual(['exec_000000000012', 'exec_000000000011']);
  });

  it('indexes a line longer than the read chunk', async () => {
    const { history } = logs();
    const huge = {
      ...entry('exec_000000000003', '2026-05-02T00:00:00Z'),
      stdout: `${'z'.repeat(6_000_000)} needle`,
    };
    await history.writer.appendExecution(huge);
    await history.writer.appendExecution(entry('exec_000000000004', '2026-05-02T00:00:01Z'));
    expect(await ids(history, 'needle')).toEqual(['exec_000000000003']);
    expect((await history.get('exec_000000000003')).stdout).toHaveLength(6_000_007);
    expect(await ids(history)).toHaveLength(2);
  });

  it('re-indexes a file replaced behind its back (new inode)', async () => {
    const { history, dir } = logs();
    await history.writer.appendExecution(entry('exec_000000000005', '2026-05-03T00:00:00Z'));
    await history.writer.appendExecution(entry('exec_000000000006', '2026-05-03T00:00:01Z'));
    expect(await ids(history)).toHaveLength(2);
    const file = join(dir, 'executions-2026-05-03.jsonl');
    const [first] = readFileSync(file, 'utf8').split('\n');
    writeFileSync(`${file}.tmp`, `${first}\n`);
    renameSync(`${file}.tmp`, file);
    await expect(history.get('exec_000000000006')).rejects.toMatchObject({ code: 'NOT_FOUND' });
    expect(await ids(history)).toEqual(['exec_000000000005']);
  });

  it('loses no append of this process while retention rewrites the same file', async () => {
    const { history, dir } = logs();
    const old = new Date(Date.now() - 40 * DAY_MS);
    const at = (i: number) => new Date(old.getTime() + i).toISOString();
    for (let i = 0; i < 200; i++) {
      await history.writer.appendExecution(entry(`exec_old${String(i).padStart(9, '0')}`, at(i)));
    }
    expect((await history.search({ limit: 1 })).total_count).toBe(200);
    const failing = (i: number) => ({
      ...entry(`exec_new${String(i).padStart(9, '0')}`, at(1000 + i)),
      exit_code: 1,
    });
    // Appends to the very file being rewritten, issued before, during and after retention.
    const appends = Array.from({ length: 50 }, (_, i) => history.writer.appendExecution(failing(i)));
    const report = history.runRetention();
    const later: Promise<void>[] = [];
    for (let i = 50; i < 100; i++) {
      later.push(history.writer.appendExecution(failing(i)));
      await yieldToLoop(); // some land before the rewrite is queued, some while it runs
    }
    await Promise.all([...appends, ...later]);
    expect((await report).removedEntries).toBe(200);
    const file = readFileSync(join(dir, `executions-${old.toISOString().slice(0, 10)}.jsonl`), 'utf8');
    expect(file.trimEnd().split('\n')).toHaveLength(100);
    expect((await history.search({ limit: 500 })).total_count).toBe(100);
    expect((await history.search({ limit: 1, status: 'success' })).total_count).toBe(0);
  });

  it('writes no index for runs alone: the first search catches up with them', async () => {
    const { history, home } = logs();
    await history.writer.appendExecution(
      entry('exec_000000000021', new Date(Date.now() - 1000).toISOString()),
    );
    // Past the batching delay of a server whose index is open: none was opened.
    await new Promise((resolve) => setTimeout(resolve, 400));
    expect(existsSync(join(home, 'index.db'))).toBe(false);
    // Nothing could have expired (today's and a fresh session's lines): retention opens nothing.
    await history.writer.appendExecution(entry('exec_000000000022', new Date().toISOString()));
    expect(await history.runRetention()).toMatchObject({ removedEntries: 0 });
    expect(existsSync(join(home, 'index.db'))).toBe(false);
    expect(await ids(history)).toEqual(['exec_000000000022', 'exec_000000000021']);
    // From then on, appends are indexed as they come.
    await history.writer.appendExecution(entry('exec_000000000023', new Date().toISOString()));
    await expect
      .poll(() => readFileSync(join(home, 'index.db-wal')).includes('exec_000000000023'))
      .toBe(true);
  });

  it('a retention pass with a line that may have expired opens the index and removes it', async () => {
    const { history, home } = logs();
    await history.writer.appendExecution(
      entry('exec_000000000031', new Date(Date.now() - 40 * DAY_MS).toISOString()),
    );
    await history.writer.appendExecution(entry('exec_000000000032', new Date().toISOString()));
    expect(await history.runRetention()).toMatchObject({ removedEntries: 1 });
    expect(existsSync(join(home, 'index.db'))).toBe(true);
    expect(await ids(history)).toEqual(['exec_000000000032']);
  });

  it('opens nothing until used, and close() releases the database', async () => {
    const { history, home } = logs();
    await history.close();
    await expect(history.search({ limit: 1 })).rejects.toThrow(/closed/);
    expect(() => readFileSync(join(home, 'index.db'))).toThrow();
  });
});

describe('query helpers', () => {
  it('turns words into quoted prefix phrases, dropping FTS syntax', () => {
    expect(ftsExpression('pandas read_csv')).toBe('"pandas"* "read_csv"*');
    expect(ftsExpression('say "hi" -> NEAR(x)')).toBe('"say"* """hi"""* "NEAR(x)"*');
    expect(() => ftsExpression('-> ()')).toThrow(/letter or digit/);
  });

  it('parses since as a UTC date or date-time', () => {
    expect(parseSince('2026-02-01')).toBe(Date.UTC(2026, 1, 1));
    expect(parseSince('2026-02-01T10:00')).toBe(Date.UTC(2026, 1, 1, 10));
    expect(parseSince('2026-02-01T10:00:00+02:00')).toBe(Date.UTC(2026, 1, 1, 8));
    expect(parseSince('2026-02-01 10:00:00.5Z')).toBe(Date.UTC(2026, 1, 1, 10, 0, 0, 500));
    expect(parseSince('last week')).toBeUndefined();
    expect(parseSince('2026-02-30x')).toBeUndefined();
  });
});
