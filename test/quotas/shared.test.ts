// CODEXEC_QUOTAS with CODEXEC_STORE=postgres://…: two SharedQuotas on one database act as two
// replicas. Runs per minute, concurrent runs and CPU seconds per day are one principal's across
// both; admissions racing on both are counted exactly; a dead replica's runs stop counting.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { QuotaTable } from '../../src/config/index.js';
import { QuotaExceededError } from '../../src/errors/index.js';
import { SharedQuotas } from '../../src/quotas/postgres.js';
import { migrateReplicas, Postgres } from '../../src/store/index.js';
import { startPostgres, type TestPostgres } from '../helpers/postgres.js';

const NOON = Date.UTC(2026, 0, 15, 12, 0, 30);

let cluster: TestPostgres;
beforeAll(async () => {
  cluster = await startPostgres();
}, 60_000);
afterAll(() => cluster?.stop());

describe('quotas counted in PostgreSQL, across replicas', () => {
  const pools: Postgres[] = [];
  afterEach(async () => {
    await Promise.all(pools.splice(0).map((pg) => pg.close()));
  });

  /** Replicas A and B (alive in codexec_replicas) under `table`, on the test's clock. */
  async function replicas(name: string, table: QuotaTable): Promise<[SharedQuotas, SharedQuotas, Postgres]> {
    const url = await cluster.createDatabase(name);
    const [a, b] = [new Postgres(url), new Postgres(url)] as [Postgres, Postgres];
    pools.push(a, b);
    await migrateReplicas(a);
    for (const id of ['replica-a', 'replica-b'])
      await a.query(
        `INSERT INTO codexec_replicas (replica_id, url, started_ms, heartbeat_ms)
         VALUES ($1, 'http://127.0.0.1:1', 0, (extract(epoch from clock_timestamp()) * 1000)::bigint)`,
        [id],
      );
    return [
      new SharedQuotas(table, a, 'replica-a', () => NOON),
      new SharedQuotas(table, b, 'replica-b', () => NOON),
      a,
    ];
  }

  async function refusal(promise: Promise<unknown>): Promise<QuotaExceededError> {
    const error = await promise.then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(error).toBeInstanceOf(QuotaExceededError);
    return error as QuotaExceededError;
  }

  it('runs_per_minute is exhausted by runs on A and B together', async () => {
    const [a, b] = await replicas('per_minute', { '*': { runs_per_minute: 3 } });
    (await a.admit('alice')).end(0);
    (await b.admit('alice')).end(0);
    (await a.admit('alice')).end(0);
    for (const replica of [a, b]) {
      const error = await refusal(replica.admit('alice'));
      expect(error.limit).toBe('runs_per_minute');
      expect(error.message).toMatch(/^3 of your runs started this minute/);
      expect(error.retryAfterMs).toBe(30_000);
      await refusal(Promise.resolve(replica.check('alice')));
    }
    await b.check('bob'); // another principal counts apart
    (await b.admit('bob')).end(0);
  });

  it('admissions racing on both replicas are counted exactly', async () => {
    const [a, b] = await replicas('race', { '*': { runs_per_minute: 5 } });
    const tries = Array.from({ length: 12 }, (_, i) => (i % 2 ? a : b).admit('alice'));
    const outcomes = await Promise.allSettled(tries);
    expect(outcomes.filter((outcome) => outcome.status === 'fulfilled')).toHaveLength(5);
  });

  it('max_concurrent_runs counts the runs running on every live replica', async () => {
    const [a, b, pg] = await replicas('concurrent', { alice: { max_concurrent_runs: 2 } });
    const first = await a.admit('alice');
    const second = await b.admit('alice');
    const error = await refusal(a.admit('alice'));
    expect(error.limit).toBe('max_concurrent_runs');
    expect(error.message).toMatch(/^2 of your runs are running/);
    // Ended here, it no longer counts here at once, and on B once written.
    first.end(0);
    const third = await a.admit('alice');
    await refusal(b.admit('alice'));
    third.end(0);
    await expect
      .poll(async () => (await pg.query('SELECT count(*)::int AS n FROM codexec_quota_runs'))[0]?.n)
      .toBe(1);
    (await b.admit('alice')).end(0);
    // B dies with its run still held: its hold stops counting, and goes at A's next admission.
    await pg.query("DELETE FROM codexec_replicas WHERE replica_id = 'replica-b'");
    const after = await a.admit('alice');
    const late = await a.admit('alice');
    expect(
      await pg.query("SELECT count(*)::int AS n FROM codexec_quota_runs WHERE replica_id = 'replica-b'"),
    ).toEqual([{ n: 0 }]);
    after.end(0);
    late.end(0);
    second.end(0);
  });

  it('cpu_seconds_per_day charged on A is spent on B', async () => {
    const [a, b] = await replicas('cpu', { '*': { cpu_seconds_per_day: 1 } });
    const run = await a.admit('alice');
    run.end(1_200_000);
    // A counts its own charge at once; B once it is written.
    await refusal(Promise.resolve(a.check('alice')));
    await expect
      .poll(
        async () =>
          await Promise.resolve(b.check('alice')).then(
            () => 'ok',
            (error: Error) => error.message,
          ),
      )
      .toMatch(/^your runs used 1\.2 CPU seconds today/);
    await b.check('bob');
  });
});
