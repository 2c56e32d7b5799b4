// The library's behaviour, the same on both backends: the disk library and the
// PostgreSQL one (a real throwaway cluster) number versions alike, keep at most maxVersions,
// refuse with the same codes and sentences, count runs, and list and search in the same order.
import { rmSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  DiskScriptStore,
  type LibraryLimits,
  type SaveScriptInput,
  type ScriptMetadata,
  type ScriptStore,
  searchScripts,
} from '../../src/library/index.js';
import { PostgresScriptStore } from '../../src/library/postgres.js';
import { Postgres } from '../../src/store/index.js';
import { startPostgres, type TestPostgres } from '../helpers/postgres.js';
import { tempDir } from '../helpers/server.js';

let cluster: TestPostgres;
const cleanups: Array<() => unknown> = [];
let databases = 0;

beforeAll(async () => {
  cluster = await startPostgres();
}, 60_000);
afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
  await cluster?.stop();
});

type Backend = (limits?: Partial<LibraryLimits>) => Promise<ScriptStore>;
const LIMITS: LibraryLimits = { maxVersions: 20, maxScriptBytes: 1_000_000 };

const disk: Backend = async (limits) => {
  const dir = tempDir();
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  return new DiskScriptStore(dir, { ...LIMITS, ...limits });
};
const postgres: Backend = async (limits) => {
  const pg = new Postgres(await cluster.createDatabase(`backend_${++databases}`));
  cleanups.push(() => pg.close());
  return new PostgresScriptStore(pg, 'alice', { ...LIMITS, ...limits });
};

const input = (name: string, code: string, more: Partial<SaveScriptInput> = {}): SaveScriptInput => ({
  name,
  description: `the ${name} script`,
  language: 'bash',
  code,
  tags: [],
  packages: [],
  ...more,
});

/** What the two backends must agree on: everything but the clock and the random id. */
const comparable = (m: ScriptMetadata) => {
  const { script_id: _id, created_at: _c, updated_at: _u, last_run_at, ...rest } = m;
  return { ...rest, ran: last_run_at !== null };
};

/** A library to search: names, tags and descriptions that score alike and apart. */
const LIBRARY: SaveScriptInput[] = [
  input('clean-csv-data', 'echo', {
    description: 'Removes empty rows from CSV exports',
    tags: ['csv', 'cleaning'],
    language: 'node',
  }),
  input('excel-to-pdf', 'echo', {
    description: 'Converts spreadsheets to PDF',
    tags: ['excel', 'pdf'],
    language: 'python',
  }),
  input('parse-excel-report', 'echo', {
    description: 'Parses monthly Excel reports from finance, extracts summary rows, outputs CSV',
    tags: ['excel', 'finance', 'parsing'],
    language: 'python',
  }),
  input('backup-db', 'echo', { description: 'Dumps the database to a file', tags: ['backup'] }),
  input('B-upper', 'echo', { description: 'excel rows', tags: ['csv'] }),
  input('a_under', 'echo', { description: 'excel rows', tags: ['csv'] }),
  input('a-dash', 'echo', { description: 'excel rows', tags: ['csv'] }),
  input('_lead', 'echo', { description: 'parse things', tags: ['excel', 'excel'] }),
];

describe.each([
  ['disk', disk],
  ['postgres', postgres],
] as const)('the script library on %s', (_kind, open) => {
  it('numbers versions, keeps id, creation and runs, and returns earlier code', async () => {
    const store = await open();
    const first = await store.save(
      input('report', 'echo one', { tags: ['a', 'b', 'a'], sourceExecutionId: 'exec_0123456789ab' }),
    );
    expect(first.metadata).toMatchObject({ version: 1, run_count: 0, tags: ['a', 'b'], last_run_at: null });
    expect(first.metadata.source_execution_id).toBe('exec_0123456789ab');
    expect(first.metadata.script_id).toMatch(/^script_[0-9a-f]{12}$/);
    expect(first.metadata.created_at).toBe(first.metadata.updated_at);
    expect(first.path).toMatch(/report\/script\.sh$/);
    const ran = await store.recordRun('report', false);
    expect(ran).toMatchObject({ run_count: 1, last_run_success: false });
    expect(Date.parse(ran.last_run_at ?? '')).toBeGreaterThan(Date.now() - 60_000);
    const second = await store.save(input('report', 'print("two")', { language: 'python' }));
    expect(second.metadata).toMatchObject({
      version: 2,
      script_id: first.metadata.script_id,
      created_at: first.metadata.created_at,
      run_count: 1,
      last_run_success: false,
      language: 'python',
      source_execution_id: null,
    });
    expect(second.path).toMatch(/report\/script\.py$/);
    expect(await store.get('report')).toMatchObject({ code: 'print("two")', metadata: second.metadata });
    const old = await store.get('report', 1);
    expect(old.code).toBe('echo one');
    expect(old.metadata.version).toBe(2);
    expect(old.path).toMatch(/report\/versions\/1\.sh$/);
    expect((await store.get('report', 2)).code).toBe('print("two")');
    expect(await store.versionCount('report')).toBe(1);
    expect(await store.versionCount('nothing')).toBe(0);
  });

  it('keeps at most maxVersions, saying how many each save pruned', async () => {
    const store = await open({ maxVersions: 3 });
    const pruned = [];
    for (let v = 1; v <= 6; v++) pruned.push((await store.save(input('counter', `echo v${v}`))).pruned);
    expect(pruned).toEqual([0, 0, 0, 1, 1, 1]);
    expect(await store.versionCount('counter')).toBe(2);
    expect((await store.get('counter', 4)).code).toBe('echo v4');
    await expect(store.get('counter', 3)).rejects.toMatchObject({
      code: 'NOT_FOUND',
      message: 'script counter has no version 3 (current: 6; earlier versions kept: 4-5)',
    });
    await expect(store.get('counter', 7)).rejects.toMatchObject({ code: 'NOT_FOUND' });
    await expect(store.get('counter', 2 ** 40)).rejects.toMatchObject({ code: 'NOT_FOUND' });
    const one = await open({ maxVersions: 1 });
    const single = [];
    for (let v = 1; v <= 3; v++) single.push((await one.save(input('only', `echo v${v}`))).pruned);
    expect(single).toEqual([0, 0, 0]);
    expect(await one.versionCount('only')).toBe(0);
    await expect(one.get('only', 2)).rejects.toMatchObject({
      code: 'NOT_FOUND',
      message: 'script only has no version 2 (current: 3)',
    });
  });

  it('refuses code over the byte limit (UTF-8 bytes), unsafe names and unknown scripts alike', async () => {
    const store = await open({ maxScriptBytes: 2000 });
    expect((await store.save(input('sized', `echo ${'é'.repeat(997)}`))).metadata.version).toBe(1);
    await expect(store.save(input('sized', `echo ${'é'.repeat(998)}`))).rejects.toMatchObject({
      code: 'LIMIT_REACHED',
      message: expect.stringContaining('2001 bytes'),
    });
    expect((await store.get('sized')).metadata.version).toBe(1);
    for (const name of [
      '../etc',
      '.hidden',
      'a/b',
      '-rf',
      'x'.repeat(65),
      "x'; DROP TABLE scripts; --",
      '',
    ]) {
      await expect(store.save(input(name, 'echo'))).rejects.toMatchObject({ code: 'INVALID_INPUT' });
      await expect(store.get(name)).rejects.toMatchObject({ code: 'INVALID_INPUT' });
      await expect(store.versionCount(name)).rejects.toMatchObject({ code: 'INVALID_INPUT' });
    }
    const unknown = { code: 'NOT_FOUND', message: 'no script named nope; list_scripts shows what is saved' };
    await expect(store.get('nope')).rejects.toMatchObject(unknown);
    await expect(store.get('nope', 1)).rejects.toMatchObject(unknown);
    await expect(store.recordRun('nope', true)).rejects.toMatchObject(unknown);
    expect((await store.list()).map((s) => s.name)).toEqual(['sized']);
  });

  it('keeps any string the caller wrote, a NUL and non-ASCII included', async () => {
    const store = await open();
    const code = 'printf "a\\0b"\n# \u0000 é 𝄞 \u2028';
    const saved = await store.save(
      input('odd', code, { description: 'nul \u0000 here', tags: ['t\u0000', 'ü'] }),
    );
    const got = await store.get('odd');
    expect(got.code).toBe(code);
    expect(got.metadata).toEqual(saved.metadata);
    expect(got.metadata).toMatchObject({ description: 'nul \u0000 here', tags: ['t\u0000', 'ü'] });
  });
});

describe('both backends agree', () => {
  it('on every listing and search result, in the same order', async () => {
    const stores = [await disk(), await postgres()];
    for (const store of stores) {
      for (const script of LIBRARY) await store.save(script);
      await store.save(LIBRARY[1] as SaveScriptInput);
      await store.recordRun('backup-db', true);
      await store.recordRun('a-dash', false);
    }
    const [onDisk, inPostgres] = await Promise.all(stores.map((store) => store.list()));
    expect(inPostgres?.map(comparable)).toEqual(onDisk?.map(comparable));
    // Sorted as JavaScript's localeCompare sorts, not by the database's collation.
    expect(onDisk?.map((s) => s.name)).toEqual([
      '_lead',
      'a_under',
      'a-dash',
      'B-upper',
      'backup-db',
      'clean-csv-data',
      'excel-to-pdf',
      'parse-excel-report',
    ]);
    for (const query of ['excel parsing', 'excel', 'csv rows', 'database dump', 'pdf', 'python', 'xyz']) {
      const ranked = (list: ScriptMetadata[] = []) =>
        searchScripts(list, query).map((hit) => [hit.metadata.name, hit.score, hit.relevance, hit.matched]);
      expect(ranked(inPostgres), query).toEqual(ranked(onDisk));
    }
    expect(searchScripts(inPostgres ?? [], 'excel parsing')[0]?.metadata.name).toBe('parse-excel-report');
  });
});
