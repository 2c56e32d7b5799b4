// tasks.db: several servers may share a CODEXEC_HOME, so opening the store fails only the unfinished
// tasks whose own server process is gone; a live server's tasks stay working. Principals and TTL.
import { spawnSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import type Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { RESTARTED, SqliteTaskStore } from '../../src/tasks/index.js';
import { tempDir } from '../helpers/server.js';

const Sqlite = createRequire(import.meta.url)('better-sqlite3') as typeof Database;

/** A pid that was a process a moment ago and is not any more. */
function deadPid(): number {
  const child = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))']);
  return Number(child.stdout.toString());
}

describe('SqliteTaskStore', () => {
  const dirs: string[] = [];
  afterEach(() => {
    for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  });

  it("fails a dead server's unfinished tasks on opening, and leaves a live server's working", async () => {
    const dir = tempDir();
    dirs.push(dir);
    const path = join(dir, 'tasks.db');
    const first = new SqliteTaskStore(path);
    const mine = await first.create('local', 'execute_code', 60_000);
    const theirs = await first.create('local', 'execute_code', 60_000);
    await first.setOutput(mine.taskId, 'partial\n', null);
    await first.close();
    // Hand the tasks to other servers: one that died, one still running (our parent, vitest's).
    const db = new Sqlite(path);
    db.prepare('UPDATE tasks SET owner_pid = ? WHERE task_id = ?').run(deadPid(), mine.taskId);
    db.prepare('UPDATE tasks SET owner_pid = ? WHERE task_id = ?').run(process.ppid, theirs.taskId);
    db.close();

    const second = new SqliteTaskStore(path);
    try {
      expect(await second.get(mine.taskId, 'local')).toMatchObject({
        status: 'failed',
        statusMessage: RESTARTED,
        output: 'partial\n',
        error: { code: -32603, message: RESTARTED },
      });
      expect((await second.get(theirs.taskId, 'local'))?.status).toBe('working');
    } finally {
      await second.close();
    }
  });

  it('keeps tasks per principal, and a finished task only for its TTL', async () => {
    const dir = tempDir();
    dirs.push(dir);
    const store = new SqliteTaskStore(join(dir, 'tasks.db'));
    try {
      const task = await store.create('alice', 'execute_code', 200);
      expect(await store.get(task.taskId, 'bob')).toBeUndefined();
      expect(await store.list('bob')).toEqual([]);
      expect((await store.list('alice')).map((t) => t.taskId)).toEqual([task.taskId]);
      await new Promise((resolve) => setTimeout(resolve, 300)); // the clock passes the 200 ms TTL
      expect((await store.get(task.taskId, 'alice'))?.status).toBe('working'); // running: kept past its TTL
      expect(
        await store.finish(task.taskId, { status: 'completed', result: { content: [] }, output: '' }),
      ).toBe(true);
      expect(await store.get(task.taskId, 'alice')).toBeUndefined();
      // Ended is ended: a late report does not change it.
      expect(await store.finish(task.taskId, { status: 'cancelled' })).toBe(false);
    } finally {
      await store.close();
    }
  });
});
