// Retention of kept run workspaces: old ones go, young ones, sessions' and used ones stay, and
// nothing a symbolic link points to is touched (fs.rm removes the link, never its target).
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { expireWorkspaces, RETENTION_FIRST_MS, WorkspaceRetention } from '../../src/pool/retention.js';
import { tempDir } from '../helpers/server.js';

const root = tempDir('codexec-retention-');
afterAll(() => rmSync(root, { recursive: true, force: true }));
const DAY = 86_400_000;

function workspace(dir: string, name: string, ageMs: number): string {
  const path = join(dir, name);
  mkdirSync(path);
  writeFileSync(join(path, 'out.csv'), 'a,b\n');
  const when = (Date.now() - ageMs) / 1000;
  utimesSync(path, when, when);
  return path;
}

describe('expireWorkspaces', () => {
  it('removes run workspaces unchanged past the retention, and only those', async () => {
    const dir = join(root, 'a');
    mkdirSync(dir);
    const old = workspace(dir, 'exec_00000000000a', 2 * DAY);
    const young = workspace(dir, 'exec_00000000000b', 1000);
    const session = workspace(dir, 'sess_00000000000c', 2 * DAY);
    const other = workspace(dir, 'exec_not_ours', 2 * DAY);
    const live = workspace(dir, 'exec_00000000000d', 2 * DAY);
    const used = workspace(dir, 'exec_00000000000e', 2 * DAY);
    const holder = spawn('sleep', ['30'], { cwd: used, stdio: 'ignore' });
    try {
      await new Promise((resolve) => setTimeout(resolve, 100));
      const removed = await expireWorkspaces({ sandboxDir: dir, maxAgeMs: DAY, inUse: (d) => d === live });
      expect(removed).toEqual([old]);
      for (const path of [young, session, other, live, used]) expect(existsSync(path)).toBe(true);
    } finally {
      holder.kill('SIGKILL');
    }
  });

  it('never follows a symbolic link out of the sandbox dir', async () => {
    const dir = join(root, 'b');
    const host = join(root, 'host');
    mkdirSync(dir);
    mkdirSync(join(host, 'deep'), { recursive: true });
    writeFileSync(join(host, 'keep.txt'), 'precious');
    writeFileSync(join(host, 'deep', 'keep.txt'), 'precious');
    const old = workspace(dir, 'exec_0000000000f1', 2 * DAY);
    mkdirSync(join(old, 'sub'));
    symlinkSync(host, join(old, 'to-host'));
    symlinkSync(join(host, 'keep.txt'), join(old, 'sub', 'file-link'));
    symlinkSync(join(host, 'deep'), join(old, 'sub', 'dir-link'));
    // A link named like a workspace, in the sandbox dir itself: not a workspace.
    symlinkSync(host, join(dir, 'exec_0000000000f2'));
    const when = (Date.now() - 2 * DAY) / 1000;
    utimesSync(old, when, when);
    expect(await expireWorkspaces({ sandboxDir: dir, maxAgeMs: DAY })).toEqual([old]);
    expect(existsSync(old)).toBe(false);
    expect(readFileSync(join(host, 'keep.txt'), 'utf8')).toBe('precious');
    expect(readFileSync(join(host, 'deep', 'keep.txt'), 'utf8')).toBe('precious');
    expect(existsSync(join(dir, 'exec_0000000000f2'))).toBe(true);
  });

  it('does nothing where there is no sandbox dir', async () => {
    expect(await expireWorkspaces({ sandboxDir: join(root, 'missing'), maxAgeMs: 1 })).toEqual([]);
  });
});

describe('WorkspaceRetention', () => {
  it("counts again the workspaces kept by an earlier server, not this server's own", async () => {
    const dir = join(root, 'kept');
    mkdirSync(dir);
    const earlier = workspace(dir, 'exec_0000000000a1', 60_000);
    const kept: string[] = [];
    const retention = new WorkspaceRetention({
      sandboxDir: dir,
      maxAgeMs: DAY,
      onKept: async (path) => void kept.push(path),
    });
    retention.start();
    // Made after start-up: a warm process's or a run's of this server, whose owner it knows.
    workspace(dir, 'exec_0000000000a2', -1000);
    try {
      await expect.poll(() => kept.length, { timeout: RETENTION_FIRST_MS + 10_000, interval: 100 }).toBe(1);
    } finally {
      await retention.stop(); // the pass under way ends first
    }
    expect(kept).toEqual([earlier]);
  }, 30_000);
});
