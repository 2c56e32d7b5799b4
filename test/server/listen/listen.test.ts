// The pieces of a listen for tasks, over a real tasks.db: what a listen request is read as (bounds
// first: a million ids are refused on their count), which ids are acknowledged (the principal's
// own), the states told in order for a task asked and answered, a task changed by another process
// sharing the store found by the poll, and nothing left followed once a listen has ended or closed.
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { TaskFeed } from '../../../src/server/listen/feed.js';
import { acknowledge, type ListenNotification, TaskListen } from '../../../src/server/listen/listen.js';
import { MAX_TASK_IDS, readTaskListen } from '../../../src/server/listen/request.js';
import { SqliteTaskStore, type TaskRun, Tasks } from '../../../src/tasks/index.js';
import { tempDir } from '../../helpers/server.js';
import { listenRequest, SUBSCRIPTION_ID, until } from '../../helpers/tasks.js';

const FORM = { method: 'elicitation/create', params: { mode: 'form', message: 'ok?' } };

describe('readTaskListen', () => {
  it('leaves to the SDK what is not a 2026-era listen naming taskIds', () => {
    expect(readTaskListen({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} })).toBeUndefined();
    const core = listenRequest(1, undefined, { filter: { toolsListChanged: true } });
    expect(readTaskListen(core)).toBeUndefined();
    const legacy = { ...listenRequest(1, ['t']), params: { notifications: { taskIds: ['t'] } } };
    expect(readTaskListen(legacy)).toBeUndefined();
  });

  it('refuses a client without the extension, ids not strings, and too many ids by their count', () => {
    expect(readTaskListen(listenRequest(1, ['t'], { tasks: false }))).toMatchObject({
      kind: 'refused',
      error: { code: -32021 },
    });
    expect(readTaskListen(listenRequest(2, 't'))).toMatchObject({ error: { code: -32602 } });
    expect(readTaskListen(listenRequest(3, ['t', 7]))).toMatchObject({ error: { code: -32602 } });
    const million = new Array(1_000_000).fill(7); // not even strings: the count refuses it first
    const started = performance.now();
    expect(readTaskListen(listenRequest(4, million))).toMatchObject({
      error: { code: -32602, message: expect.stringContaining(`at most ${MAX_TASK_IDS} taskIds`) },
    });
    expect(performance.now() - started).toBeLessThan(500);
  });

  it('names each id once, dropping ones too long to be a task id', () => {
    expect(readTaskListen(listenRequest('x', ['a', 'b', 'a', 'z'.repeat(200)]))).toEqual({
      kind: 'listen',
      id: 'x',
      taskIds: ['a', 'b'],
    });
  });
});

describe('a listen over tasks.db', () => {
  const cleanups: Array<() => unknown> = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });
  function tasksAt(path: string): Tasks {
    const tasks = new Tasks({ store: new SqliteTaskStore(path), ttlMs: 60_000 });
    cleanups.push(async () => {
      await tasks.shutdown();
      await tasks.close();
    });
    return tasks;
  }
  function home(): string {
    const dir = tempDir();
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    return join(dir, 'tasks.db');
  }
  /** A task whose work hands out its run and ends when `finish` is called. */
  async function started(tasks: Tasks, principal = 'alice') {
    let finish: (value: Record<string, unknown>) => void = () => {};
    let run: TaskRun | undefined;
    const record = await tasks.start(principal, 'execute_code', (handed) => {
      run = handed;
      return new Promise((resolve, reject) => {
        finish = resolve;
        handed.signal.addEventListener('abort', () => reject(handed.signal.reason));
      });
    });
    return { taskId: record.taskId, run: run as unknown as TaskRun, finish: (value = {}) => finish(value) };
  }
  function listening(feed: TaskFeed, taskIds: string[], principal = 'alice') {
    const told: ListenNotification[] = [];
    let ended = false;
    const listen = new TaskListen({
      feed,
      principal,
      id: 7,
      taskIds,
      notify: (notification) => told.push(notification),
      ended: () => {
        ended = true;
      },
    });
    listen.start();
    return { listen, told, statuses: () => told.map((note) => note.params.status), ended: () => ended };
  }

  it("acknowledges the principal's own tasks only", async () => {
    const tasks = tasksAt(home());
    const mine = await started(tasks, 'alice');
    const theirs = await started(tasks, 'bob');
    expect(await acknowledge(tasks, 'alice', [mine.taskId, theirs.taskId, 'unknown'])).toEqual([mine.taskId]);
    mine.finish();
    theirs.finish();
  });

  it('tells each state in order, then ends and follows nothing', async () => {
    const tasks = tasksAt(home());
    const feed = new TaskFeed(tasks);
    const { taskId, run, finish } = await started(tasks);
    const listen = listening(feed, [taskId]);
    await until(() => listen.statuses().includes('working'), 'working');
    const answered = run.ask('approval', FORM);
    await until(() => listen.statuses().includes('input_required'), 'input_required');
    await tasks.update(taskId, 'alice', { approval: { action: 'accept' } });
    await answered;
    await until(() => listen.statuses().length === 3, 'working again');
    finish({ content: [] });
    await until(listen.ended, 'the end');
    expect(listen.statuses()).toEqual(['working', 'input_required', 'working', 'completed']);
    expect(listen.told[1]?.params).toMatchObject({
      inputRequests: { approval: FORM },
      _meta: { [SUBSCRIPTION_ID]: 7 },
    });
    expect(feed.size).toBe(0);
  });

  it('a task changed by another process sharing the store is found by the poll', async () => {
    const path = home();
    const owner = tasksAt(path);
    const elsewhere = tasksAt(path); // another server on the same home
    // Opened first: a store opening fails the unfinished tasks of its own pid (a recycled one).
    expect(await elsewhere.get('none', 'alice')).toBeUndefined();
    const feed = new TaskFeed(elsewhere, 100);
    const { taskId } = await started(owner);
    const listen = listening(feed, [taskId]);
    await until(() => listen.statuses().includes('working'), 'working');
    await owner.cancel(taskId, 'alice');
    await until(listen.ended, 'the end');
    expect(listen.statuses()).toEqual(['working', 'cancelled']);
    expect(feed.size).toBe(0);
  });

  it('a listen closed before its tasks end leaves nothing followed', async () => {
    const tasks = tasksAt(home());
    const feed = new TaskFeed(tasks);
    const first = await started(tasks);
    const second = await started(tasks);
    const listen = listening(feed, [first.taskId, second.taskId]);
    await until(() => listen.statuses().length === 2, 'both working');
    expect(feed.size).toBe(2);
    listen.listen.close();
    expect(feed.size).toBe(0);
    first.finish();
    await tasks.cancel(second.taskId, 'alice');
    await feed.settled();
    expect(listen.statuses()).toEqual(['working', 'working']);
    expect(listen.ended()).toBe(false);
  });
});
