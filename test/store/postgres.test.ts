import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Postgres, ReplicaRegistry, replicaId } from '../../src/store/index.js';
import { startPostgres, type TestPostgres } from '../helpers/postgres.js';

let cluster: TestPostgres;

beforeAll(async () => {
  cluster = await startPostgres();
}, 60_000);
afterAll(() => cluster?.stop());

describe('Postgres store', () => {
  it('applies each migration once, even when replicas migrate at the same time', async () => {
    const url = await cluster.createDatabase('migrate');
    const replicas = [new Postgres(url), new Postgres(url), new Postgres(url)];
    const v1 = ['CREATE TABLE things (id INTEGER PRIMARY KEY)'];
    await Promise.all(replicas.map((pg) => pg.migrate('things', v1)));
    // A newer codexec adds a column: every replica's migrate converges on version 2.
    const v2 = [...v1, 'ALTER TABLE things ADD COLUMN name TEXT'];
    const fresh = [new Postgres(url), new Postgres(url)];
    await Promise.all(fresh.map((pg) => pg.migrate('things', v2)));
    await fresh[0]?.query('INSERT INTO things (id, name) VALUES (1, $1)', ['one']);
    expect(await replicas[0]?.query('SELECT id, name FROM things')).toEqual([{ id: 1, name: 'one' }]);
    expect(
      await replicas[1]?.query("SELECT version FROM codexec_migrations WHERE component = 'things'"),
    ).toEqual([{ version: 2 }]);
    // An older codexec meeting a newer schema refuses instead of writing rows it does not understand.
    const old = new Postgres(url);
    await expect(old.migrate('things', [])).rejects.toThrow(/newer than this codexec knows/);
    await Promise.all([...replicas, ...fresh, old].map((pg) => pg.close()));
  });

  it('rolls a failed transaction back', async () => {
    const pg = new Postgres(await cluster.createDatabase('tx'));
    await pg.query('CREATE TABLE t (v INTEGER)');
    await expect(
      pg.transaction(async (tx) => {
        await tx.query('INSERT INTO t VALUES (1)');
        throw new Error('no');
      }),
    ).rejects.toThrow('no');
    expect(await pg.query('SELECT count(*)::int AS n FROM t')).toEqual([{ n: 0 }]);
    await pg.close();
  });

  it('fails a query, not the process, when the database cannot be reached', async () => {
    const pg = new Postgres('postgres://codexec@127.0.0.1:1/none');
    await expect(pg.query('SELECT 1')).rejects.toThrow();
    await pg.close();
  });
});

describe('ReplicaRegistry', () => {
  it('lists live replicas, and one that left is dead at once', async () => {
    const url = await cluster.createDatabase('replicas');
    const pg = new Postgres(url);
    const registry = new ReplicaRegistry(pg);
    await registry.start('http://127.0.0.1:1234');
    expect((await registry.live()).map((row) => row.url)).toEqual(['http://127.0.0.1:1234']);
    expect((await registry.alive(registry.id))?.url).toBe('http://127.0.0.1:1234');
    expect(registry.id).toBe(replicaId());
    // A replica whose heartbeat stopped long ago is dead.
    await pg.query(
      "INSERT INTO codexec_replicas (replica_id, url, started_ms, heartbeat_ms) VALUES ('gone', 'http://x', 0, 0)",
    );
    expect(await registry.alive('gone')).toBeUndefined();
    await registry.stop();
    expect(await registry.alive(registry.id)).toBeUndefined();
    await pg.close();
  });
});
