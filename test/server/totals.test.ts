// One parent cgroup over all runs: CODEXEC_TOTAL_MEMORY_MB and CODEXEC_TOTAL_MAX_PROCS
// stop runs that each stay within their own limits, and the result names the setting.
import { readdirSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makesCgroups } from '../helpers/sandbox.js';
import { callTool, startServer, type TestServer } from '../helpers/server.js';

interface Result {
  success: boolean;
  stdout: string;
  stderr: string;
  limit?: string;
}

/** Holds `mb` of touched memory for a while, then says so. */
const hold = (mb: number) =>
  `import time\nb = bytearray(${mb} * 1024 * 1024)\nfor i in range(0, len(b), 4096): b[i] = 1\ntime.sleep(2)\nprint("held")`;

// The parent of all runs is a cgroup: only a server that can make them (root's, or one with a
// delegated subtree) has it; doctor says the totals are not enforced elsewhere (doctor-cgroups).
describe.runIf(makesCgroups())('bounds on all runs together (namespace mode, real cgroups)', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startServer({
      env: { CODEXEC_TOTAL_MEMORY_MB: '300', CODEXEC_TOTAL_MAX_PROCS: '40', CODEXEC_POOL_SIZE: '0' },
    });
  });
  afterAll(() => server.close());
  const run = (code: string) => callTool<Result>(server.client, 'execute_code', { language: 'python', code });

  it('two runs of 200 MB under a 300 MB total: one is killed, naming CODEXEC_TOTAL_MEMORY_MB', async () => {
    const results = (await Promise.all([run(hold(200)), run(hold(200))])).map((r) => r.value);
    const killed = results.filter((r) => r.limit === 'memory');
    expect(killed).toHaveLength(1);
    expect(killed[0]?.stderr).toContain('CODEXEC_TOTAL_MEMORY_MB=300');
    expect(results.filter((r) => r.success && r.stdout === 'held\n')).toHaveLength(1);
    // Alone, the same run fits (its own limit is CODEXEC_MEMORY_MB's 512).
    expect((await run(hold(200))).value).toMatchObject({ success: true, stdout: 'held\n' });
  });

  it('a run forking past a 40-process total is refused forks, naming CODEXEC_TOTAL_MAX_PROCS', async () => {
    const { value } = await run(
      'import os, time\nn = 0\ntry:\n    for _ in range(100):\n        if os.fork() == 0:\n            time.sleep(3)\n            os._exit(0)\n        n += 1\nexcept BlockingIOError:\n    print("refused after", n)',
    );
    expect(value.limit).toBe('processes');
    expect(value.stdout).toMatch(/^refused after \d+\n$/);
    expect(Number(value.stdout.split(' ')[2])).toBeLessThan(40);
    expect(value.stderr).toContain('CODEXEC_TOTAL_MAX_PROCS=40');
  });

  it('puts every run cgroup in one parent named for the server', () => {
    const parents = readdirSync('/sys/fs/cgroup/pids').filter(
      (name) => name === `codexec-runs-${server.pid}`,
    );
    expect(parents).toHaveLength(1);
  });
});
