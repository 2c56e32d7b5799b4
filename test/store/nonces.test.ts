// The replicas' shared nonce ledger (src/store/nonces.ts) on a real PostgreSQL: a nonce is claimed
// once across every replica, and rows past their expiry are deleted.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NonceLedger, Postgres } from '../../src/store/index.js';
import { startPostgres, type TestPostgres } from '../helpers/postgres.js';

let cluster: TestPostgres;
const pools: Postgres[] = [];

beforeAll(async () => {
  cluster = await startPostgres();
}, 60_000);
afterAll(async () => {
  await Promise.all(pools.map((pg) => pg.close()));
  await cluster?.stop();
});

describe('NonceLedger', () => {
  it('lets one replica claim a nonce, once, whichever replicas race for it', async () => {
    const url = await cluster.createDatabase('nonces');
    pools.push(new Postgres(url), new Postgres(url), new Postgres(url));
    const ledgers = pools.map((pg) => new NonceLedger(pg));
    const until = Date.now() + 60_000;
    const raced = await Promise.all(ledgers.map((ledger) => ledger.claim('a'.repeat(32), until)));
    expect(raced.filter(Boolean)).toHaveLength(1);
    expect(await ledgers[0]?.claim('b'.repeat(32), until)).toBe(true);
    expect(await ledgers[1]?.claim('b'.repeat(32), until)).toBe(false);
  });

  it('deletes the nonces past their expiry', async () => {
    const pg = new Postgres(await cluster.createDatabase('expiry'));
    pools.push(pg);
    const first = new NonceLedger(pg);
    expect(await first.claim('c'.repeat(32), Date.now() - 1000)).toBe(true);
    expect(await first.claim('d'.repeat(32), Date.now() + 60_000)).toBe(true);
    // A replica starting later prunes on its first claim.
    expect(await new NonceLedger(pg).claim('e'.repeat(32), Date.now() + 60_000)).toBe(true);
    const left = async () =>
      (await pg.query<{ nonce: string }>('SELECT nonce FROM codexec_replica_nonces ORDER BY nonce')).map(
        (row) => row.nonce[0],
      );
    // The prune runs beside the claim: wait for it.
    for (const end = Date.now() + 5000; Date.now() < end && (await left()).length > 2; )
      await new Promise((resolve) => setTimeout(resolve, 50));
    expect(await left()).toEqual(['d', 'e']);
  });
});
