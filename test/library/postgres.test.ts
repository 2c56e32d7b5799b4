// The library in PostgreSQL shared by replicas: two libraries on one database stand
// for two replicas. What one saves, the other gets, lists and runs; saves of one name from both at
// once get distinct, consecutive versions and lose none; a principal reaches only its own rows.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type SaveScriptInput, ScriptLibrary } from '../../src/library/index.js';
import { PostgresScriptStore } from '../../src/library/postgres.js';
import { Postgres } from '../../src/store/index.js';
import { startPostgres, type TestPostgres } from '../helpers/postgres.js';

let cluster: TestPostgres;
const opened: Postgres[] = [];

beforeAll(async () => {
  cluster = await startPostgres();
}, 60_000);
afterAll(async () => {
  for (const pg of opened) await pg.close();
  await cluster?.stop();
});

const LIMITS = { maxVersions: 100, maxScriptBytes: 1_000_000 };

/** Two replicas' libraries (each its own pool) on a fresh database. */
async function replicas(
  database: string,
  limits = LIMITS,
): Promise<[ScriptLibrary, ScriptLibrary, Postgres]> {
  const url = await cluster.createDatabase(database);
  const [a, b] = [new Postgres(url), new Postgres(url)];
  opened.push(a, b);
  const library = (pg: Postgres) =>
    new ScriptLibrary((principal) => new PostgresScriptStore(pg, principal, limits));
  return [library(a), library(b), a];
}

const input = (name: string, code: string, description = `the ${name} script`): SaveScriptInput => ({
  name,
  description,
  language: 'bash',
  code,
  tags: ['shared'],
  packages: [],
});

describe('the script library in PostgreSQL, shared by replicas', () => {
  it('what replica A saves, replica B gets, lists and counts runs of, and A sees it', async () => {
    const [a, b] = await replicas('shared');
    const saved = await a.of('alice').save(input('report', 'echo one'));
    const got = await b.of('alice').get('report');
    expect(got).toMatchObject({ code: 'echo one', metadata: saved.metadata });
    expect((await b.of('alice').list()).map((s) => s.name)).toEqual(['report']);
    await b.of('alice').recordRun('report', true);
    await b.of('alice').save(input('report', 'echo two'));
    expect((await a.of('alice').get('report')).metadata).toMatchObject({
      version: 2,
      run_count: 1,
      last_run_success: true,
      script_id: saved.metadata.script_id,
    });
    expect((await a.of('alice').get('report', 1)).code).toBe('echo one');
    expect(await a.of('alice').versionCount('report')).toBe(1);
  });

  it('concurrent saves of one name from both replicas get distinct consecutive versions, none lost', async () => {
    const [a, b] = await replicas('concurrent');
    const saves = [];
    for (let i = 0; i < 20; i++) {
      const replica = i % 2 === 0 ? a : b;
      saves.push(replica.of('alice').save(input('race', `echo ${i}`)));
    }
    const saved = await Promise.all(saves);
    const versions = saved.map((s) => s.metadata.version).sort((x, y) => x - y);
    expect(versions).toEqual(Array.from({ length: 20 }, (_, i) => i + 1));
    expect(new Set(saved.map((s) => s.metadata.script_id)).size).toBe(1);
    // Each version holds the code of the save that got its number.
    for (const s of saved) expect((await b.of('alice').get('race', s.metadata.version)).code).toBe(s.code);
    expect(await a.of('alice').versionCount('race')).toBe(19);
    // Runs counted from both replicas at once are all counted.
    await Promise.all(
      Array.from({ length: 10 }, (_, i) => (i % 2 ? a : b).of('alice').recordRun('race', true)),
    );
    expect((await a.of('alice').get('race')).metadata.run_count).toBe(10);
  });

  it('concurrent saves keep at most maxVersions, each pruning the oldest', async () => {
    const [a, b] = await replicas('bounded', { maxVersions: 3, maxScriptBytes: 1000 });
    await Promise.all(
      Array.from({ length: 12 }, (_, i) => (i % 2 ? a : b).of('alice').save(input('bounded', `echo ${i}`))),
    );
    const current = await a.of('alice').get('bounded');
    expect(current.metadata.version).toBe(12);
    expect(await b.of('alice').versionCount('bounded')).toBe(2);
    for (const v of [10, 11]) await expect(a.of('alice').get('bounded', v)).resolves.toBeDefined();
    await expect(a.of('alice').get('bounded', 9)).rejects.toMatchObject({ code: 'NOT_FOUND' });
  });

  it('a name under two principals is two scripts; neither reaches the other', async () => {
    const [a, b, pg] = await replicas('principals');
    const sneaky = "bob'; DELETE FROM scripts; --";
    await a.of('alice').save(input('report', 'echo alice', 'alice quarterly'));
    await b.of('bob').save(input('report', 'echo bob', 'bob quarterly'));
    await b.of(sneaky).save(input('report', 'echo sneaky'));
    expect((await b.of('alice').get('report')).code).toBe('echo alice');
    expect((await a.of('bob').get('report')).code).toBe('echo bob');
    await b.of('bob').recordRun('report', false);
    await b.of('bob').save(input('report', 'echo bob 2'));
    expect((await a.of('alice').get('report')).metadata).toMatchObject({ version: 1, run_count: 0 });
    expect(await a.of('alice').versionCount('report')).toBe(0);
    await expect(a.of('carol').get('report')).rejects.toMatchObject({
      code: 'NOT_FOUND',
      message: 'no script named report; list_scripts shows what is saved',
    });
    await expect(a.of('carol').recordRun('report', true)).rejects.toMatchObject({ code: 'NOT_FOUND' });
    await expect(a.of('Alice').get('report')).rejects.toMatchObject({ code: 'NOT_FOUND' });
    expect(await a.of('carol').list()).toEqual([]);
    expect((await a.of('alice').list()).map((s) => s.description)).toEqual(['alice quarterly']);
    expect((await a.of(sneaky).get('report')).code).toBe('echo sneaky');
    const rows = await pg.query<{ principal: string; n: number }>(
      'SELECT principal, count(*)::int AS n FROM script_versions GROUP BY principal ORDER BY principal',
    );
    expect(rows).toEqual([
      { principal: 'alice', n: 1 },
      { principal: 'bob', n: 2 },
      { principal: sneaky, n: 1 },
    ]);
  });

  it('creates its tables once, whichever replica comes first', async () => {
    const [a, b, pg] = await replicas('migrate');
    await Promise.all([a.of('x').list(), b.of('y').list(), a.of('z').list()]);
    expect(await pg.query("SELECT version FROM codexec_migrations WHERE component = 'scripts'")).toEqual([
      { version: 1 },
    ]);
  });
});
