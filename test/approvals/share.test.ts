// The dashboard's approval queue across replicas (src/approvals/share.ts) on a real
// PostgreSQL: two queues with two replica ids on one database, as two replicas would be.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ApprovalEvent, ApprovalQueue, SharedApprovals } from '../../src/approvals/index.js';
import { Postgres } from '../../src/store/index.js';
import { startPostgres, type TestPostgres } from '../helpers/postgres.js';

const form = (code: string) =>
  ({
    kind: 'run',
    form: {
      tool: 'execute_code',
      language: 'python',
      sessionId: null,
      code,
      reason: 'ask',
      trustScope: 'principal',
    },
  }) as const;

/** Who may decide in the dashboard (CODEXEC_HTTP_APPROVERS), on every replica. */
const APPROVERS = ['carol', 'dave'];

let cluster: TestPostgres;
beforeAll(async () => {
  cluster = await startPostgres();
}, 60_000);
afterAll(() => cluster?.stop());

async function until<T>(probe: () => T | undefined | Promise<T | undefined>, ms = 5000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error('timed out');
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** Two replicas' queues on one database, each alive in the registry. */
async function twoReplicas(name: string) {
  const pg = new Postgres(await cluster.createDatabase(name));
  const a = new ApprovalQueue(10_000, APPROVERS);
  const b = new ApprovalQueue(10_000, APPROVERS);
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
    expect(card).toMatchObject({ principal: 'alice', kind: 'run', code: 'print(1)' });
    expect(b.list('bob')).toEqual([]);
    expect(seenOnB.map((event) => event.type)).toEqual(['approval']);
    // Neither a principal who is no approver nor the one whose call waits decides it.
    for (const who of ['bob', 'alice'])
      await expect(b.decideAnywhere(card.id, 'approve', who)).rejects.toMatchObject({ code: 'FORBIDDEN' });
    await b.decideAnywhere(card.id, 'approve_trust_session', 'carol');
    // The decider travels with the decision to the replica the call waits on.
    expect(await reply).toEqual({ kind: 'decided', decision: 'approve_trust_session', decider: 'carol' });
    // Answered once: a second answer, from any replica, finds nothing waiting.
    await expect(b.decideAnywhere(card.id, 'deny', 'dave')).rejects.toThrow(/no approval/);
    await expect(a.decideAnywhere(card.id, 'deny', 'dave')).rejects.toThrow(/no approval/);
    expect(bobOnB).toEqual([]);
    await until(() => (a.list(undefined).length === 0 ? true : undefined));
    await close();
  });

  it("a replica no page watches lists another's approvals when asked (GET /api/approvals)", async () => {
    const { a, b, close } = await twoReplicas('unwatched');
    const asked = new AbortController();
    const reply = a.ask('alice', form('print(2)'), asked.signal);
    // No page watches b: its poll fetches nothing, but a list asked for fetches now.
    expect(b.watched).toBe(false);
    expect(b.list('alice')).toEqual([]);
    await until(() => a.list('alice')[0]); // written on a's side
    const cards = await until(async () => {
      const listed = await b.listAnywhere('alice');
      return listed.length > 0 ? listed : undefined;
    });
    expect(cards).toMatchObject([{ principal: 'alice', code: 'print(2)' }]);
    expect(await b.listAnywhere('bob')).toEqual([]);
    asked.abort();
    await reply.catch(() => {});
    await close();
  });

  it("an approver's own call waiting on another replica stays waiting for another approver", async () => {
    const { a, b, close } = await twoReplicas('own');
    b.watch(undefined, () => {});
    const reply = a.ask('carol', form('print(3)'), new AbortController().signal);
    const card = await until(() => b.list(undefined)[0]);
    await expect(b.decideAnywhere(card.id, 'approve', 'carol')).rejects.toMatchObject({
      code: 'FORBIDDEN',
      message: expect.stringContaining('whose call waits'),
    });
    expect(a.list('carol')).toHaveLength(1);
    await b.decideAnywhere(card.id, 'deny', 'dave');
    expect(await reply).toMatchObject({ kind: 'refused', decider: 'dave' });
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
    await expect(b.decideAnywhere(card.id, 'approve', 'dave')).resolves.toBeDefined(); // the row is there…
    expect(await again).toEqual({ kind: 'decided', decision: 'approve', decider: 'dave' }); // …and A, alive after all, gets it
    await close();
  });
});
