// approve_trust_session with CODEXEC_STORE=postgres://…: what a principal trusted through one
// replica is trusted by the others once a request of theirs starts; never another principal's;
// and no longer once the replica that recorded it is gone (trust lasts one server's life).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SharedTrust } from '../../../src/server/http/trust.js';
import { migrateReplicas, Postgres } from '../../../src/store/index.js';
import { startPostgres, type TestPostgres } from '../../helpers/postgres.js';

let cluster: TestPostgres;
beforeAll(async () => {
  cluster = await startPostgres();
}, 60_000);
afterAll(() => cluster?.stop());

describe('trust shared across replicas', () => {
  it('is written through by one replica and read by another, per principal, while its replica lives', async () => {
    const url = await cluster.createDatabase('trust');
    const pools = [new Postgres(url), new Postgres(url)] as const;
    try {
      await migrateReplicas(pools[0]);
      for (const id of ['replica-a', 'replica-b'])
        await pools[0].query(
          `INSERT INTO codexec_replicas (replica_id, url, started_ms, heartbeat_ms)
           VALUES ($1, 'http://127.0.0.1:1', 0, (extract(epoch from clock_timestamp()) * 1000)::bigint)`,
          [id],
        );
      const a = new SharedTrust(pools[0], 'replica-a');
      const b = new SharedTrust(pools[1], 'replica-b');
      const onA = a.setFor('alice');
      onA.add('execute_code:bash').add('execute_code:bash');
      expect(onA.has('execute_code:bash')).toBe(true);
      await expect.poll(() => b.keys('alice')).toEqual(['execute_code:bash']);

      const onB = b.setFor('alice');
      expect(onB.has('execute_code:bash')).toBe(false);
      await b.refresh('alice', onB);
      expect(onB.has('execute_code:bash')).toBe(true);
      const bobOnB = b.setFor('bob');
      await b.refresh('bob', bobOnB);
      expect(bobOnB.size).toBe(0);

      // A gone from the registry: what it recorded is no longer trusted by replicas asking afresh.
      await pools[0].query("DELETE FROM codexec_replicas WHERE replica_id = 'replica-a'");
      expect(await b.keys('alice')).toEqual([]);
      expect(await a.keys('alice')).toEqual(['execute_code:bash']); // A itself, while it runs
    } finally {
      await Promise.all(pools.map((pg) => pg.close()));
    }
  });
});
