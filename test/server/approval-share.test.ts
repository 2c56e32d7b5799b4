// The dashboard's approval queue across replicas (src/server/approval-share.ts) on a real
// PostgreSQL: two queues with two replica ids on one database, as two replicas would be.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SharedApprovals } from '../../src/server/approval-share.js';
import { type ApprovalEvent, ApprovalQueue } from '../../src/server/index.js';
import { Postgres } from '../../src/store/index.js';
import { startPostgres, type TestPostgres } from '../helpers/postgres.js';

const form = (code: string) => ({
  tool: 'execute_code',
  language: 'python',
  sessionId: null,
  code,
  reason: 'ask',
});

let cluster: TestPostgres;
beforeAll(async () => {
  cluster = await startPostgres();
}, 60_000);
afterAll(() => cluster?.stop());

async function until<T>(probe: () => T | undefined, ms = 5000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error('timed out');
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** Two replicas' queues on one database, each alive in the registry. */
async function twoReplicas(name: string) {
  const pg = new Postgres(await cluster.createDatabase(name));
  const a = new ApprovalQueue(10_000);
  const b = new ApprovalQueue(10_000);
  const sharedA = new SharedApprovals(pg, a, 'replica-a');
  const sharedB = new SharedApprovals(pg, b, 'replica-b');
  await sharedA.start();
  await sharedB.start();
  const beat = async (id: string, ms: string) =>
    pg.query(
      `INSERT INTO codexec_replicas VALUES ($1, 'http://x', 0, ${ms}) ON CONFLICT (replica_id) DO UPDATE SET heartbeat_ms = EXCLUDED.heartbeat_ms`,
      [id],
    );
  const now = '(extract(epoch from clock_timestamp()) * 1000)::bigint';
  await beat('replica-a', now);
  await beat('replica-b', now);
  return {
    pg,
    a,
    b,
    kill: (id: string) => beat(id, '0'),
    async close() {
      await sharedA.stop();
      await sharedB.stop();
      await pg.close();
    },
  };
}

describe('approvals shared between replicas', () => {
  it('a page on replica B sees and answers an approval waiting on A; another principal neither sees nor answers it', async () => {
    const { a, b, close } = await twoReplicas('share');
    const seenOnB: ApprovalEvent[] = [];
    b.watch('alice', (event) => seenOnB.push(event));
    const bobOnB: ApprovalEvent[] = [];
    b.watch('bob', (event) => bobOnB.push(event));
    const reply = a.ask('alice', form('print(1)'), new AbortController().signal);
    const card = await until(() => b.list('alice')[0]);
    expect(card).toMatchObject({ principal: 'alice', code: 'print(1)' });
    expect(b.list('bob')).toEqual([]);
    expect(seenOnB.map((event) => event.type)).toEqual(['approval']);
    await expect(b.decideAnywhere(card.id, 'approve', 'bob')).rejects.toThrow(/no approval .* is waiting/);
    await b.decideAnywhere(card.id, 'approve_trust_session', 'alice');
    expect(await reply).toEqual({ kind: 'decided', decision: 'approve_trust_session' });
    // Answered once: a second answer, from any replica, finds nothing waiting.
    await expect(b.decideAnywhere(card.id, 'deny', 'alice')).rejects.toThrow(/no approval/);
    await expect(a.decideAnywhere(card.id, 'deny', undefined)).rejects.toThrow(/no approval/);
    expect(bobOnB).toEqual([]);
    await until(() => (a.list(undefined).length === 0 ? true : undefined));
    await close();
  });

  it("a withdrawn approval leaves the other replicas; a dead replica's approvals are not listed", async () => {
    const { a, b, kill, close } = await twoReplicas('withdraw');
    b.watch(undefined, () => {});
    const call = new AbortController();
    const reply = a.ask('alice', form('x'), call.signal);
    await until(() => b.list(undefined)[0]);
    call.abort();
    expect(await reply).toMatchObject({ kind: 'refused' });
    await until(() => (b.list(undefined).length === 0 ? true : undefined));
    const again = a.ask('alice', form('y'), new AbortController().signal);
    const card = await until(() => b.list(undefined)[0]);
    await kill('replica-a');
    await until(() => (b.list(undefined).length === 0 ? true : undefined));
    await expect(b.decideAnywhere(card.id, 'approve', undefined)).resolves.toBeDefined(); // the row is there…
    expect(await again).toEqual({ kind: 'decided', decision: 'approve' }); // …and A, alive after all, gets it
    await close();
  });
});
