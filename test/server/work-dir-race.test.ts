// The attack: a command in execute_command's workspace swaps a directory `x` with a symlink to a
// host directory (renameat2 RENAME_EXCHANGE, in a loop) while other commands run with
// work_dir "x". The name was checked without following links, but the sandbox then bound
// `<workspace>/x` by its path again, following the swapped-in link: code ran in the host's
// directory, read-write. Now the workspace itself is bound and the command starts in x by its path
// inside the sandbox, where a swapped-in link leads nowhere outside it.
import { chmodSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SANDBOX_MODE } from '../helpers/mode.js';
import { callTool, startServer, type TestServer, tempDir } from '../helpers/server.js';

interface Result {
  success: boolean;
  stdout: string;
  stderr: string;
  work_dir: string;
  code?: string;
}

const SWAPPER = `import ctypes, time
libc = ctypes.CDLL(None, use_errno=True)
end = time.time() + float(__import__("sys").argv[1])
n = 0
while time.time() < end:
    libc.syscall(316, -100, b"x", -100, b"y", 2)  # renameat2(x, y, RENAME_EXCHANGE)
    n += 1
print("swaps", n)`;

describe('execute_command work_dir against a directory swapped for a symlink', () => {
  let server: TestServer;
  const host = tempDir('codexec-race-host-');
  const run = (args: Record<string, unknown>) => callTool<Result>(server.client, 'execute_command', args);

  beforeAll(async () => {
    // Open to everyone, as /tmp is: a sandbox user that reached it could list it and write there.
    writeFileSync(join(host, 'HOST_CANARY'), 'host');
    chmodSync(host, 0o777);
    server = await startServer({ env: { CODEXEC_MAX_CONCURRENT_RUNS: '4' } });
    const made = await run({
      command: `mkdir x && touch x/INSIDE && ln -s ${JSON.stringify(host)} y && printf '%s' '${SWAPPER}' > swap.py`,
    });
    expect(made.value.success, made.value.stderr).toBe(true);
  });
  afterAll(() => server.close());

  it.runIf(SANDBOX_MODE === 'namespace')(
    'binds the workspace, not the work_dir named inside it',
    async () => {
      const { value } = await run({ command: 'cat /proc/self/mountinfo', work_dir: 'x' });
      const workspace = value.work_dir.slice(0, -'/x'.length);
      const mounts = value.stdout.split('\n').map((line) => line.split(' ')[4]);
      expect(mounts).toContain(workspace);
      expect(mounts).not.toContain(value.work_dir);
    },
  );

  it("never runs a command in the host's directory, nor lets it write there", async () => {
    const swapping = run({ command: 'python3 swap.py 8', timeout: 30 });
    const probe = 'ls -a; echo mark > written-$$ 2>/dev/null; true';
    const seen: string[] = [];
    const until = Date.now() + 7000;
    while (Date.now() < until) {
      const batch = await Promise.all([0, 1, 2].map(() => run({ command: probe, work_dir: 'x' })));
      // Refused (x was the link when checked: FORBIDDEN_PATH), or run: its listing.
      for (const { value } of batch) seen.push(value.stdout ?? `refused ${value.code}`);
    }
    const swapped = await swapping;
    expect(swapped.value.stdout, JSON.stringify(swapped.value)).toMatch(/^swaps \d+/);
    expect(seen.length).toBeGreaterThan(6);
    expect(seen.filter((listing) => listing.includes('HOST_CANARY'))).toEqual([]);
    expect(readdirSync(host)).toEqual(['HOST_CANARY']);
    expect(readFileSync(join(host, 'HOST_CANARY'), 'utf8')).toBe('host');
  }, 60_000);
});
