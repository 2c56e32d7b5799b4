// `codexec doctor` on the bounds of all runs together: the totals where cgroups are
// writable, and that they are not enforced where they are not (a non-root server on cgroup v1).
import { spawnSync } from 'node:child_process';
import { chmodSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { baseEnv, CLI, tempDir } from '../helpers/server.js';

const home = tempDir('codexec-doctor-');
chmodSync(home, 0o777);
afterAll(() => rmSync(home, { recursive: true, force: true }));

function doctor(prefix: string[] = []): string {
  const env = { ...baseEnv(join(home, 'state')), HOME: home, CODEXEC_TOTAL_MEMORY_MB: '3000' };
  const [command = process.execPath, ...args] = [...prefix, process.execPath, CLI, 'doctor'];
  const result = spawnSync(command, args, { env, encoding: 'utf8', timeout: 60_000 });
  expect(result.status).toBe(0);
  return result.stdout.split('\n').find((line) => line.includes('cgroups')) ?? '';
}

describe('doctor and the parent cgroup', () => {
  const root = process.getuid?.() === 0;

  it.runIf(root)('names the totals where it can create the parent of all runs', () => {
    const line = doctor();
    expect(line).toMatch(/^\s+OK\s+cgroups/);
    expect(line).toContain('3000 MB (CODEXEC_TOTAL_MEMORY_MB)');
    expect(line).toContain('4096 processes (CODEXEC_TOTAL_MAX_PROCS)');
  });

  it.runIf(root)('says the totals are not enforced where cgroups are not writable (as nobody)', () => {
    const line = doctor(['setpriv', '--reuid=65534', '--regid=65534', '--clear-groups']);
    expect(line).toMatch(/^\s+missing\s+cgroups\s+cgroups not writable here/);
    expect(line).toContain('CODEXEC_TOTAL_MEMORY_MB, CODEXEC_TOTAL_MAX_PROCS are not enforced');
  });
});
