// A task asking its client (2026 era): the request kept in tasks.db (input_required, one per key),
// answered by tasks/update for the owning principal only, from this server or another sharing the
// home; cancel and timeouts withdraw it; a home made before these columns is migrated; a server
// gone while its task waited leaves it failed "server restarted".
import { spawnSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import type Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { RESTARTED, SqliteTaskStore, type TaskRun, Tasks } from '../../src/tasks/index.js';
import { LOCAL_PRINCIPAL } from '../../src/util/index.js';
import { startRawServer } from '../helpers/raw.js';
import { tempDir } from '../helpers/server.js';
import { overStdio } from '../helpers/tasks.js';

const Sqlite = createRequire(import.meta.url)('better-sqlite3') as typeof Database;
const FORM = { method: 'elicitation/create', params: { mode: 'form', message: 'ok?' } };
const YES = { action: 'accept', content: { decision: 'approve' } };

describe('task input', () => {
  const dirs: string[] = [];
  const closers: Array<() => unknown> = [];
  afterEach(async () => {
    for (const close of closers.splice(0).reverse()) await close();
    for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  });
  function home(): string {
    const dir = tempDir();
    dirs.push(dir);
    return join(dir, 'tasks.db');
  }
  function tasksAt(path: string): Tasks {
    const tasks = new Tasks({ store: new SqliteTaskStore(path), ttlMs: 60_000 });
    closers.push(async () => {
      await tasks.shutdown();
      await tasks.close();
    });
    return tasks;
  }
  /** Start a task whose work hands its TaskRun out and finishes when `finish` is called. */
  async function started(tasks: Tasks, principal = 'alice') {
    let finish: (value: Record<string, unknown>) => void = () => {};
    let run: TaskRun | undefined;
    const record = await tasks.start(principal, 'execute_code', (handed) => {
      run = handed;
      return new Promise((resolve) => {
        finish = resolve;
      });
    });
    return { taskId: record.taskId, run: run as unknown as TaskRun, finish: (v = {}) => finish(v) };
  }

  it('asks: input_required with its requests (one per key), answered by the owner only, then working', async () => {
    const tasks = tasksAt(home());
    const { taskId, run, finish } = await started(tasks);
    const first = run.ask('approval', FORM);
    const again = run.ask('approval', { other: 'ignored: the key is asked already' });
    expect(await tasks.get(taskId, 'alice')).toMatchObject({
      status: 'input_required',
      inputRequests: { approval: FORM },
    });
    // Another principal's answer finds no task; answers to other keys are ignored.
    expect(await tasks.update(taskId, 'bob', { approval: YES })).toBe(false);
    expect(await tasks.update(taskId, 'alice', { unknown: YES })).toBe(true);
    expect((await tasks.get(taskId, 'alice'))?.status).toBe('input_required');
    expect(await tasks.update('no-such-task', 'alice', { approval: YES })).toBe(false);

    expect(await tasks.update(taskId, 'alice', { approval: YES })).toBe(true);
    await expect(first).resolves.toEqual(YES);
    await expect(again).resolves.toEqual(YES);
    expect(await tasks.get(taskId, 'alice')).toMatchObject({ status: 'working', inputRequests: {} });
    finish();
  });

  it('stays input_required while any request is outstanding', async () => {
    const tasks = tasksAt(home());
    const { taskId, run, finish } = await started(tasks);
    const a = run.ask('egress:a:80', FORM);
    const b = run.ask('egress:b:80', FORM);
    await tasks.update(taskId, 'alice', { 'egress:a:80': YES });
    await expect(a).resolves.toEqual(YES);
    expect(await tasks.get(taskId, 'alice')).toMatchObject({
      status: 'input_required',
      inputRequests: { 'egress:b:80': FORM },
    });
    await tasks.update(taskId, 'alice', { 'egress:b:80': YES });
    await expect(b).resolves.toEqual(YES);
    expect((await tasks.get(taskId, 'alice'))?.status).toBe('working');
    finish();
  });

  it('a timeout withdraws the request; a cancel rejects the ask and the task reads cancelled', async () => {
    const tasks = tasksAt(home());
    const { taskId, run, finish } = await started(tasks);
    await expect(run.ask('approval', FORM, AbortSignal.timeout(50))).rejects.toThrow();
    expect(await tasks.get(taskId, 'alice')).toMatchObject({ status: 'working', inputRequests: {} });

    const waiting = run.ask('approval', FORM);
    expect((await tasks.get(taskId, 'alice'))?.status).toBe('input_required');
    expect(await tasks.cancel(taskId, 'alice')).toBe(true);
    await expect(waiting).rejects.toThrow(/cancelled/);
    expect(await tasks.get(taskId, 'alice')).toMatchObject({ status: 'cancelled', inputRequests: {} });
    finish();
  });

  it('an answer given to another server sharing the home reaches the asking run', async () => {
    const path = home();
    const owner = tasksAt(path);
    const { taskId, run, finish } = await started(owner, LOCAL_PRINCIPAL);
    const asked = run.ask('approval', FORM);
    // A codexec server process of its own (a replica): it sees the request and takes the answer.
    const replica = startRawServer({ CODEXEC_HOME: dirname(path) });
    closers.push(() => replica.close());
    await replica.discover();
    const send = overStdio(replica);
    expect((await send('tasks/get', { taskId })).result).toMatchObject({
      status: 'input_required',
      inputRequests: { approval: FORM },
    });
    const ack = await send('tasks/update', { taskId, inputResponses: { approval: YES } });
    expect(ack.error).toBeUndefined();
    expect(ack.result).toBeDefined();
    await expect(asked).resolves.toEqual(YES);
    expect((await send('tasks/get', { taskId })).result?.status).toBe('working');
    finish();
  });

  it('a task left input_required by a server that is gone reads failed "server restarted"', async () => {
    const path = home();
    const first = new SqliteTaskStore(path);
    const task = await first.create('alice', 'execute_code', 60_000);
    expect(await first.requestInput(task.taskId, 'approval', FORM)).toBe(true);
    await first.close();
    const dead = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))']);
    const db = new Sqlite(path);
    db.prepare('UPDATE tasks SET owner_pid = ? WHERE task_id = ?').run(Number(dead.stdout), task.taskId);
    db.close();
    const second = new SqliteTaskStore(path);
    try {
      expect(await second.get(task.taskId, 'alice')).toMatchObject({
        status: 'failed',
        statusMessage: RESTARTED,
        inputRequests: {},
      });
    } finally {
      await second.close();
    }
  });

  it('a tasks.db made before input requests existed is migrated, its tasks kept', async () => {
    const path = home();
    const db = new Sqlite(path);
    db.exec(`CREATE TABLE tasks (task_id TEXT PRIMARY KEY, principal TEXT NOT NULL, tool TEXT NOT NULL,
      status TEXT NOT NULL, status_message TEXT, output TEXT NOT NULL DEFAULT '', result TEXT, error TEXT,
      created_ms INTEGER NOT NULL, updated_ms INTEGER NOT NULL, ttl_ms INTEGER NOT NULL,
      expires_ms INTEGER NOT NULL, owner_pid INTEGER NOT NULL)`);
    const now = Date.now();
    db.prepare(
      `INSERT INTO tasks VALUES ('old', 'alice', 'execute_code', 'completed', NULL, 'out', '{"content":[]}',
       NULL, ?, ?, 60000, ?, 1)`,
    ).run(now, now, now + 60_000);
    db.pragma('user_version = 1');
    db.close();
    const store = new SqliteTaskStore(path);
    try {
      expect(await store.get('old', 'alice')).toMatchObject({
        status: 'completed',
        output: 'out',
        inputRequests: {},
      });
      const task = await store.create('alice', 'execute_code', 60_000);
      expect(await store.requestInput(task.taskId, 'approval', FORM)).toBe(true);
      expect((await store.get(task.taskId, 'alice'))?.inputRequests).toEqual({ approval: FORM });
    } finally {
      await store.close();
    }
  });
});
