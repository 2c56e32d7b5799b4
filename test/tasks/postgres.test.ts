// Tasks on PostgreSQL (CODEXEC_STORE=postgres://…): two stores on one database act as two replicas.
// A task made on A is read, answered and cancelled through B, and A's run stops; a task whose
// owner is gone from the registry reads failed "server restarted"; principals stay apart.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { migrateReplicas, Postgres } from '../../src/store/index.js';
import { RESTARTED, type TaskRun, Tasks } from '../../src/tasks/index.js';
import { PgTaskStore } from '../../src/tasks/postgres.js';
import { startPostgres, type TestPostgres } from '../helpers/postgres.js';

const FORM = { method: 'elicitation/create', params: { mode: 'form', message: 'ok?' } };
const YES = { action: 'accept', content: { decision: 'approve' } };

let cluster: TestPostgres;
beforeAll(async () => {
  cluster = await startPostgres();
}, 60_000);
afterAll(() => cluster?.stop());

interface Replica {
  readonly id: string;
  readonly pg: Postgres;
  readonly tasks: Tasks;
}

describe('tasks on PostgreSQL, across replicas', () => {
  const closers: Array<() => Promise<unknown>> = [];
  afterEach(async () => {
    for (const close of closers.splice(0).reverse()) await close();
  });

  /** Two replicas on a fresh database, both alive in codexec_replicas. */
  async function replicas(name: string): Promise<[Replica, Replica]> {
    const url = await cluster.createDatabase(name);
    const made = ['replica-a', 'replica-b'].map((id) => {
      const pg = new Postgres(url);
      const tasks = new Tasks({ store: new PgTaskStore(pg, id), ttlMs: 60_000 });
      closers.push(async () => {
        await tasks.shutdown();
        await tasks.close();
        await pg.close();
      });
      return { id, pg, tasks };
    }) as [Replica, Replica];
    await migrateReplicas(made[0].pg);
    for (const { id, pg } of made)
      await pg.query(
        `INSERT INTO codexec_replicas (replica_id, url, started_ms, heartbeat_ms)
         VALUES ($1, 'http://127.0.0.1:1', 0, (extract(epoch from clock_timestamp()) * 1000)::bigint)`,
        [id],
      );
    return made;
  }

  /** A task on `replica` whose work hands out its TaskRun and ends when `finish` is called or aborted. */
  async function started(replica: Replica, principal = 'alice') {
    let finish: (value: Record<string, unknown>) => void = () => {};
    let run: TaskRun | undefined;
    const record = await replica.tasks.start(principal, 'execute_code', (handed) => {
      run = handed;
      return new Promise((resolve, reject) => {
        finish = resolve;
        handed.signal.addEventListener('abort', () => reject(handed.signal.reason));
      });
    });
    return { taskId: record.taskId, run: run as unknown as TaskRun, finish: (v = {}) => finish(v) };
  }

  it('a task made on A is read, answered and cancelled through B; A stops its run', async () => {
    const [a, b] = await replicas('across');
    const { taskId, run } = await started(a);
    run.onOutput('stdout', 'first\n');
    await a.tasks.get(taskId, 'alice'); // flushes the output so far
    expect(await b.tasks.get(taskId, 'alice')).toMatchObject({ status: 'working', output: 'first\n' });
    expect((await b.tasks.list('alice')).map((task) => task.taskId)).toEqual([taskId]);

    const asked = run.ask('approval', FORM);
    expect((await a.tasks.get(taskId, 'alice'))?.status).toBe('input_required'); // asked: shown at once
    expect((await b.tasks.get(taskId, 'alice'))?.inputRequests).toEqual({ approval: FORM });
    expect(await b.tasks.update(taskId, 'alice', { approval: YES })).toBe(true);
    await expect(asked).resolves.toEqual(YES); // A's poll took the answer B recorded
    expect(await a.tasks.get(taskId, 'alice')).toMatchObject({ status: 'working', inputRequests: {} });

    const aborted = new Promise<unknown>((resolve) =>
      run.signal.addEventListener('abort', () => resolve(run.signal.reason)),
    );
    const cancelledAt = Date.now();
    expect(await b.tasks.cancel(taskId, 'alice')).toBe(true);
    expect((await a.tasks.get(taskId, 'alice'))?.status).toBe('cancelled');
    expect(String(await aborted)).toMatch(/cancelled by tasks\/cancel/);
    expect(Date.now() - cancelledAt).toBeLessThan(2000);
  });

  it("a finished task's result is read from the other replica", async () => {
    const [a, b] = await replicas('result');
    const { taskId, run, finish } = await started(a);
    run.onOutput('stderr', 'warn\n');
    finish({ content: [{ type: 'text', text: 'done' }], structuredContent: { stdout: 'done' } });
    await expect.poll(async () => (await b.tasks.get(taskId, 'alice'))?.status).toBe('completed');
    expect(await b.tasks.get(taskId, 'alice')).toMatchObject({
      output: '[stderr] warn\n',
      result: { structuredContent: { stdout: 'done' } },
    });
  });

  it("another principal's task is unknown on every replica: not read, listed, answered or cancelled", async () => {
    const [a, b] = await replicas('principals');
    const { taskId, run } = await started(a);
    const asked = run.ask('approval', FORM);
    await expect.poll(async () => (await a.tasks.get(taskId, 'alice'))?.status).toBe('input_required');
    for (const replica of [a, b]) {
      expect(await replica.tasks.get(taskId, 'bob')).toBeUndefined();
      expect(await replica.tasks.list('bob')).toEqual([]);
      expect(await replica.tasks.update(taskId, 'bob', { approval: YES })).toBe(false);
      expect(await replica.tasks.cancel(taskId, 'bob')).toBe(false);
    }
    expect((await b.tasks.get(taskId, 'alice'))?.status).toBe('input_required');
    expect(run.signal.aborted).toBe(false);
    await b.tasks.update(taskId, 'alice', { approval: YES });
    await expect(asked).resolves.toEqual(YES);
  });

  it('a task whose owner left the registry reads failed "server restarted", its output kept', async () => {
    const [a, b] = await replicas('orphan');
    const { taskId, run } = await started(a);
    run.onOutput('stdout', 'partial\n');
    await a.tasks.get(taskId, 'alice');
    // A alive but silent past DEAD_AFTER_MS is dead too: its heartbeat an hour old.
    await b.pg.query(
      'UPDATE codexec_replicas SET heartbeat_ms = heartbeat_ms - 3600000 WHERE replica_id = $1',
      [a.id],
    );
    expect(await b.tasks.get(taskId, 'alice')).toMatchObject({
      status: 'failed',
      statusMessage: RESTARTED,
      output: 'partial\n',
      error: { code: -32603, message: RESTARTED },
    });
    // A row missing altogether is a dead owner as well (listed, too).
    const second = await started(a);
    await b.pg.query('DELETE FROM codexec_replicas WHERE replica_id = $1', [a.id]);
    const listed = await b.tasks.list('alice');
    expect(listed.find((task) => task.taskId === second.taskId)?.status).toBe('failed');
    // The owner, if it still ran, stops what it can no longer report.
    await expect.poll(() => second.run.signal.aborted).toBe(true);
  });
});
