// The PostgreSQL log index against index.db: one corpus written through both, the same pages for
// a table of queries (and random ones), principals isolated, replicas sharing, retention.
import { readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  type ExecutionLogEntry,
  ExecutionLogs,
  ExecutionNotFoundError,
  type History,
  type SearchFilters,
} from '../../src/logs/index.js';
import { PgExecutionLogs } from '../../src/logs/postgres/index.js';
import { Postgres } from '../../src/store/index.js';
import { asPrincipal } from '../../src/util/index.js';
import { startPostgres, type TestPostgres } from '../helpers/postgres.js';
import { tempDir } from '../helpers/server.js';
import { DAY_MS, oneshot } from './fixtures.js';
import { at, CORPUS, exec, type Line, QUERIES } from './pg-corpus.js';

let cluster: TestPostgres;
const stores: Postgres[] = [];
const open: History[] = [];
const dirs: string[] = [];
const KEEP = { success: 36500, failure: 36500, session: 36500 };

beforeAll(async () => {
  cluster = await startPostgres();
}, 60_000);
afterEach(async () => {
  await Promise.all(open.splice(0).map((h) => h.close()));
  await Promise.all(stores.splice(0).map((s) => s.close()));
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});
afterAll(() => cluster?.stop());

let databases = 0;
async function database(): Promise<string> {
  return cluster.createDatabase(`logs_${++databases}`);
}

function sqlite(days = KEEP) {
  const home = tempDir();
  dirs.push(home);
  const history = new ExecutionLogs({
    logDir: join(home, 'logs'),
    indexPath: join(home, 'index.db'),
    retentionDays: days,
  });
  open.push(history);
  return history;
}

function pg(url: string, days = KEEP, replica = 'test-replica') {
  const home = tempDir();
  dirs.push(home);
  const store = new Postgres(url);
  stores.push(store);
  const history = new PgExecutionLogs({ logDir: join(home, 'logs'), store, replica, retentionDays: days });
  open.push(history);
  return { history, store, dir: join(home, 'logs') };
}

async function write(history: History, lines: readonly Line[]): Promise<void> {
  for (const line of lines) {
    await asPrincipal(line.principal, () =>
      line.kind === 'exec'
        ? history.writer.appendExecution(oneshot(line.e) as unknown as ExecutionLogEntry)
        : history.writer.appendSession(line.id, line.entry),
    );
  }
}

describe('PgExecutionLogs', () => {
  it('answers a table of queries exactly as index.db, for everyone and for each principal', async () => {
    const lite = sqlite();
    const { history } = pg(await database());
    await write(lite, CORPUS);
    await write(history, CORPUS);
    for (const filters of QUERIES) {
      for (const principal of [undefined, 'alice', 'bob', 'local', 'nobody']) {
        const expected = await lite.search(filters, principal);
        const actual = await history.search(filters, principal);
        expect(JSON.stringify({ filters, principal, page: actual })).toBe(
          JSON.stringify({ filters, principal, page: expected }),
        );
      }
    }
    // Sanity: the table exercises matches, not only empty pages.
    expect((await history.search({ query: 'read_csv', limit: 20 })).total_count).toBe(1);
    expect((await history.search({ query: 'csv_read', limit: 20 })).total_count).toBe(0);
    for (const id of ['exec_a00000000001', 'exec_a00000000005', 'exec_a00000000008', 'exec_a00000000009']) {
      expect(await history.get(id)).toEqual(await lite.get(id));
    }
  }, 60_000);

  it('answers random corpora and random queries as index.db', async () => {
    const lite = sqlite();
    const { history } = pg(await database());
    let seed = 7;
    const rand = () => {
      seed = (seed * 1103515245 + 12345) % 2147483648;
      return seed / 2147483648;
    };
    const pick = <T>(list: readonly T[]): T => list[Math.floor(rand() * list.length)] as T;
    const words = ['alpha', 'alp', 'beta', 'Gamma', 'gam', 'dél', 'del', 'x1', '1x', '42', 'ümlaut', 'π'];
    const seps = [' ', '_', '.', '-', '/', '\n', '::', '"', "'", '=', ''];
    const text = () =>
      Array.from({ length: 1 + Math.floor(rand() * 8) }, () => pick(words) + pick(seps)).join('');
    const lines: Line[] = Array.from({ length: 150 }, (_, i) =>
      exec(pick(['alice', 'bob']), {
        id: `exec_${i.toString(16).padStart(12, '0')}`,
        at: at(Math.floor(i / 3), i % 3),
        language: pick(['python', 'bash']),
        code: text(),
        stdout: text(),
        stderr: rand() < 0.3 ? text() : '',
        exit_code: rand() < 0.7 ? 0 : 1,
      }),
    );
    await write(lite, lines);
    await write(history, lines);
    let matched = 0;
    for (let i = 0; i < 150; i++) {
      const filters: SearchFilters = {
        query:
          Array.from(
            { length: 1 + Math.floor(rand() * 2) },
            () => pick(words) + pick(seps) + pick(['', ...words]),
          )
            .join(' ')
            .trim() || 'alpha',
        limit: pick([1, 5, 50]),
        ...(rand() < 0.2 && { status: pick(['success', 'failed'] as const) }),
      };
      const principal = pick([undefined, 'alice', 'bob']);
      let expected: unknown;
      try {
        expected = await lite.search(filters, principal);
      } catch (error) {
        await expect(history.search(filters, principal)).rejects.toThrow((error as Error).message);
        continue;
      }
      expect({ filters, page: await history.search(filters, principal) }).toEqual({
        filters,
        page: expected,
      });
      if ((expected as { total_count: number }).total_count > 0) matched++;
    }
    expect(matched).toBeGreaterThan(40);
  }, 60_000);

  it('finds an entry too big for one tsvector as index.db does', async () => {
    const lite = sqlite();
    const { history, store } = pg(await database());
    const many = Array.from({ length: 120_000 }, (_, i) => `w${i.toString(36)}x`).join(' ');
    const lines = [
      exec('alice', { id: 'exec_big000000001', at: at(1), code: 'print(big)', stdout: many }),
      exec('alice', { id: 'exec_big000000002', at: at(2), code: 'w10x small' }),
    ];
    await write(lite, lines);
    await write(history, lines);
    for (const query of ['w10x', 'w1', 'wzzzx', 'print big', 'w1x w2x', 'big w10', 'small', 'w2x w1x']) {
      for (const principal of [undefined, 'alice', 'bob']) {
        for (const filters of [
          { query, limit: 20 },
          { query, limit: 1, status: 'success' as const, language: 'python' as const },
        ]) {
          expect(await history.search(filters, principal)).toEqual(await lite.search(filters, principal));
        }
      }
    }
    expect((await history.search({ query: 'w1x w2x', limit: 20 }, 'alice')).total_count).toBe(1);
    const [row] = await store.query<{ spilled: boolean }>(
      "SELECT spilled FROM codexec_log_executions WHERE execution_id = 'exec_big000000001'",
    );
    expect(row?.spilled).toBe(true);
  }, 60_000);

  it("never shows a principal another's entries", async () => {
    const { history } = pg(await database());
    await write(history, CORPUS);
    const bobs = await history.search({ query: 'secret', limit: 20 }, 'alice');
    expect(bobs.total_count).toBe(0);
    await expect(history.get('exec_b00000000001', 'alice')).rejects.toBeInstanceOf(ExecutionNotFoundError);
    await expect(history.get('exec_nope', 'alice')).rejects.toBeInstanceOf(ExecutionNotFoundError);
    expect((await history.get('exec_b00000000001', 'bob')).stdout).toBe('secret\n');
    expect(await history.principalOf('exec_b00000000001')).toBe('bob');
    expect(await history.principalOf('exec_nope')).toBeUndefined();
    // An injection attempt is just words.
    const sly = await history.search({ query: "') OR true -- '' & ! | :*", limit: 20 }, 'alice');
    expect(sly.total_count).toBe(0);
  }, 60_000);

  it('lets replicas with different log directories see each other', async () => {
    const url = await database();
    const one = pg(url, KEEP, 'one');
    const two = pg(url, KEEP, 'two');
    await write(one.history, [
      exec('alice', { id: 'exec_000000000r01', at: at(1), code: 'from replica one' }),
    ]);
    await write(two.history, [
      exec('alice', { id: 'exec_000000000r02', at: at(2), code: 'from replica two' }),
    ]);
    // Each replica sends what it appended within INDEX_DELAY_MS (or before its own search).
    await one.history.search({ limit: 1 });
    await two.history.search({ limit: 1 });
    for (const { history } of [one, two]) {
      const page = await history.search({ query: 'replica', limit: 20 }, 'alice');
      expect(page.results.map((r) => r.execution_id)).toEqual(['exec_000000000r02', 'exec_000000000r01']);
      expect((await history.get('exec_000000000r01', 'alice')).code).toBe('from replica one');
    }
    expect(readdirSync(one.dir)).toEqual(['executions-2026-05-01.jsonl']);
    const [row] = await one.store.query<{ replica: string }>(
      "SELECT replica FROM codexec_log_executions WHERE execution_id = 'exec_000000000r02'",
    );
    expect(row?.replica).toBe('two');
  }, 60_000);

  it('sends appends within the batch delay without a search', async () => {
    const url = await database();
    const one = pg(url);
    const two = pg(url);
    await two.history.search({ limit: 1 }); // migrated
    await write(one.history, [exec('alice', { id: 'exec_000000000d01', at: at(1) })]);
    await expect
      .poll(async () => (await two.history.search({ limit: 5 })).total_count, { timeout: 3000 })
      .toBe(1);
  }, 60_000);

  it('expires rows with the same cutoffs as index.db, and the JSONL as before', async () => {
    const days = { success: 30, failure: 90, session: 60 };
    const now = Date.UTC(2026, 6, 1);
    const old = (d: number) => new Date(now - d * DAY_MS).toISOString();
    const lines: Line[] = [
      exec('alice', { id: 'exec_00000000e001', at: old(40), code: 'old success' }),
      exec('alice', { id: 'exec_00000000e002', at: old(40), code: 'old failure', exit_code: 1 }),
      exec('alice', { id: 'exec_00000000e003', at: old(100), code: 'older failure', exit_code: 1 }),
      exec('alice', { id: 'exec_00000000e004', at: old(10), code: 'recent success' }),
      exec('alice', {
        id: 'exec_00000000e005',
        at: old(70),
        code: 'session run',
        session_id: 'sess_000000000e05',
      }),
      exec('alice', {
        id: 'exec_00000000e006',
        at: old(50),
        code: 'session run',
        session_id: 'sess_000000000e06',
      }),
    ];
    const lite = sqlite(days);
    const { history, dir } = pg(await database(), days);
    await write(lite, lines);
    await write(history, lines);
    const liteReport = await lite.runRetention(now);
    const report = await history.runRetention(now);
    expect(report.removedEntries).toBe(liteReport.removedEntries);
    expect(report.expired.map((e) => e.executionId).sort()).toEqual(
      liteReport.expired.map((e) => e.executionId).sort(),
    );
    expect(await history.search({ limit: 20 })).toEqual(await lite.search({ limit: 20 }));
    expect((await history.search({ limit: 20 })).results.map((r) => r.execution_id).sort()).toEqual([
      'exec_00000000e002',
      'exec_00000000e004',
      'exec_00000000e006',
    ]);
    expect(readdirSync(dir).sort()).toContain(`executions-${old(10).slice(0, 10)}.jsonl`);
    expect(readdirSync(dir)).not.toContain(`executions-${old(100).slice(0, 10)}.jsonl`);
  }, 60_000);
});
