// Kept workspaces are swept (so disks do not fill): soon after start-up a server removes run workspaces past
// CODEXEC_WORKSPACE_RETENTION_HOURS and a dead server's leftovers, never a live session's or a
// running run's, and never what a symbolic link in a workspace points to.
import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, describe, expect, it } from 'vitest';
import { callTool, startServer, tempDir } from '../helpers/server.js';

const home = tempDir('codexec-retention-home-');
const host = tempDir('codexec-retention-host-');
afterAll(() => {
  rmSync(home, { recursive: true, force: true });
  rmSync(host, { recursive: true, force: true });
});

function age(path: string, ms: number): void {
  const when = (Date.now() - ms) / 1000;
  utimesSync(path, when, when);
}

describe('workspace retention', () => {
  it('sweeps expired and leftover workspaces at start-up, keeping live ones and link targets', async () => {
    const sandbox = join(home, 'sandbox');
    const expired = join(sandbox, 'exec_00000000aaaa');
    mkdirSync(expired, { recursive: true });
    writeFileSync(join(expired, 'result.csv'), 'a,b\n');
    writeFileSync(join(host, 'precious.txt'), 'keep me');
    symlinkSync(host, join(expired, 'host-link'));
    age(expired, 2 * 86_400_000);
    const leftover = join(sandbox, 'exec_00000000bbbb');
    mkdirSync(leftover);
    writeFileSync(join(leftover, '_codexec_script.py'), 'print(1)');
    const recent = join(sandbox, 'exec_00000000cccc');
    mkdirSync(recent);
    writeFileSync(join(recent, 'fresh.csv'), 'x\n');

    const server = await startServer({ home, env: { CODEXEC_POOL_SIZE: '0' } });
    try {
      const session = await callTool<{ session_id: string }>(server.client, 'start_session', {
        language: 'python',
      });
      const sessionDir = join(sandbox, session.value.session_id);
      const known = new Set(readdirSync(sandbox));
      const running = callTool<{ success: boolean; stdout: string }>(server.client, 'execute_code', {
        language: 'python',
        code: 'import time\nopen("out.txt", "w").write("x")\ntime.sleep(9)\nprint("done")',
      });
      let runDir: string | undefined;
      while (!runDir) {
        runDir = readdirSync(sandbox).find((name) => name.startsWith('exec_') && !known.has(name));
        await sleep(20);
      }
      runDir = join(sandbox, runDir);
      // Both look as old as the expired one: only their being in use keeps them.
      age(sessionDir, 2 * 86_400_000);
      age(runDir, 2 * 86_400_000);
      // Retention's first pass (5 s after start-up) says what it removed once it is done.
      await expect
        .poll(() => server.stderr().includes('past their retention'), { timeout: 30_000, interval: 100 })
        .toBe(true);
      expect(existsSync(expired)).toBe(false);
      expect(existsSync(leftover)).toBe(false);
      expect(readFileSync(join(host, 'precious.txt'), 'utf8')).toBe('keep me');
      for (const dir of [recent, sessionDir, runDir]) expect(existsSync(dir)).toBe(true);
      expect((await running).value).toMatchObject({ success: true, stdout: 'done\n' });
      expect(server.stderr()).toContain('past their retention');
    } finally {
      await server.close();
    }
  });
});
