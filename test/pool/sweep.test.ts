// The sweep of workspaces a killed server left: what no live process uses goes, a run's output
// and anything younger than a live server's could be stay.
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { SWEEP_MIN_AGE_MS, sweepWorkspaces } from '../../src/pool/sweep.js';
import { tempDir } from '../helpers/server.js';

const dir = tempDir('codexec-sweep-');
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function workspace(name: string, files: string[] = []): string {
  const path = join(dir, name);
  mkdirSync(path);
  for (const file of files) writeFileSync(join(path, file), 'x');
  return path;
}

describe('sweepWorkspaces', () => {
  it('removes unused workspaces of runs (empty, or only their code file) and of sessions; keeps output, young ones and those in use', async () => {
    const empty = workspace('exec_000000000001');
    const killed = workspace('exec_000000000002', ['_codexec_script.py']);
    const output = workspace('exec_000000000003', ['_codexec_script.py', 'result.csv']);
    const session = workspace('sess_000000000004', ['notes.txt']);
    const used = workspace('exec_000000000005');
    // A killed landlock run's: its code file and its own TMPDIR, with what it put there.
    const landlock = workspace('exec_00000000000a', ['_codexec_script.sh']);
    mkdirSync(join(landlock, '.codexec-tmp-Ab12Cd'));
    writeFileSync(join(landlock, '.codexec-tmp-Ab12Cd', 'scratch'), 'x');
    const other = workspace('something_else');
    const holder = spawn('sleep', ['30'], { cwd: used, stdio: 'ignore' });
    try {
      await new Promise((resolve) => setTimeout(resolve, 100));
      // A ctime cannot be set back: the sweep is told it is later instead.
      const result = await sweepWorkspaces(dir, Date.now() + SWEEP_MIN_AGE_MS + 1000);
      expect([...result.removed].sort()).toEqual([empty, killed, session, landlock].sort());
      expect(result.young).toBe(0);
      for (const path of [output, used, other]) expect(existsSync(path)).toBe(true);
      // Too young to tell: left, and said so.
      const fresh = workspace('exec_000000000007');
      const again = await sweepWorkspaces(dir, Date.now());
      expect(again.removed).toEqual([]);
      expect(again.young).toBeGreaterThan(0);
      expect(existsSync(fresh)).toBe(true);
    } finally {
      holder.kill('SIGKILL');
    }
  });

  it("keeps a workspace a container engine's command line names as a volume (docker mode's runs and sessions)", async () => {
    // `podman run --volume <workspace>:/workspace:rw …` lives as long as its container: the
    // workspace is followed by a colon there, not by a slash or the argument's end.
    const mounted = workspace('exec_000000000008');
    const session = workspace('sess_000000000009', ['keep.txt']);
    const engine = spawn(
      'bash',
      ['-c', 'sleep 30; :', 'podman', '--volume', `${mounted}:/workspace:rw`, '--volume', `${session}:/w:rw`],
      { stdio: 'ignore' },
    );
    try {
      await new Promise((resolve) => setTimeout(resolve, 100));
      const result = await sweepWorkspaces(dir, Date.now() + SWEEP_MIN_AGE_MS + 1000);
      expect(result.removed).not.toContain(mounted);
      expect(result.removed).not.toContain(session);
      expect(existsSync(join(session, 'keep.txt'))).toBe(true);
    } finally {
      engine.kill('SIGKILL');
    }
  });

  it('does nothing where there is no sandbox dir', async () => {
    expect(await sweepWorkspaces(join(dir, 'missing'))).toEqual({ removed: [], young: 0 });
  });
});
