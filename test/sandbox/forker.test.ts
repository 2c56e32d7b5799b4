// The forker: a small host Python that pre-forks the namespace sandboxes' launchers so the server
// never forks its own ~100 MB on the hot path. It must really be the one starting them, and
// neither it nor they may outlive the server, however the server ends.
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { Forker } from '../../src/sandbox/host/forker.js';
import { packagePath } from '../../src/util/index.js';
import { SANDBOX_ENV } from '../helpers/mode.js';
import { processesUnder } from '../helpers/procs.js';
import { makesCgroups } from '../helpers/sandbox.js';
import { callTool, startServer } from '../helpers/server.js';

interface Proc {
  readonly pid: number;
  readonly ppid: number;
  readonly argv: readonly string[];
}

function processes(): Proc[] {
  const found: Proc[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (fields[0] === 'Z') continue;
      const argv = readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0').filter(Boolean);
      found.push({ pid: Number(entry), ppid: Number(fields[1]), argv });
    } catch {
      // exited while we looked
    }
  }
  return found;
}

/** Live children of `pid`, from each of its threads' children list. */
function childrenOf(pid: number): number[] {
  const found: number[] = [];
  try {
    for (const task of readdirSync(`/proc/${pid}/task`))
      for (const child of readFileSync(`/proc/${pid}/task/${task}/children`, 'utf8').split(' '))
        if (child.trim()) found.push(Number(child));
  } catch {
    // it ended while we looked
  }
  return found;
}

/** The argv of `pid` ([] once it is gone). */
function argvOf(pid: number): string[] {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean);
  } catch {
    return [];
  }
}

const forkerOf = (server: number) =>
  processes().find((p) => p.ppid === server && p.argv.some((arg) => arg.endsWith('/drivers/forker.py')));

// Launchers live in run cgroups: a server that cannot make them (an ordinary user's, usually)
// starts every run directly, with no forker.
describe.runIf(makesCgroups())('forker', () => {
  it('starts the launchers of namespace runs, and dies with a SIGKILLed server', async () => {
    const server = await startServer({ env: { ...SANDBOX_ENV, CODEXEC_POOL_SIZE: '0' } });
    try {
      for (let i = 0; i < 3; i++) {
        const { value } = await callTool<{ stdout: string }>(server.client, 'execute_code', {
          language: 'bash',
          code: 'echo ok',
        });
        expect(value.stdout).toBe('ok\n');
      }
      await expect.poll(() => forkerOf(server.pid), { timeout: 5000 }).toBeDefined();
      const forker = forkerOf(server.pid) as Proc;
      // Ready launchers (forks of the forker waiting for an argv) are its children; the server
      // has no launcher (bash) children of its own.
      const launchers = (parent: number) =>
        processes()
          .filter(
            (p) =>
              p.ppid === parent &&
              (p.argv.includes('codexec-launcher') || p.argv.some((a) => a.endsWith('/drivers/forker.py'))),
          )
          .map((p) => p.pid);
      await expect.poll(() => launchers(forker.pid).length, { timeout: 5000 }).toBeGreaterThan(0);
      expect(launchers(server.pid)).toEqual([forker.pid]);
      const started = launchers(forker.pid);

      process.kill(server.pid, 'SIGKILL');
      const alive = (pids: readonly number[]) => processes().filter((p) => pids.includes(p.pid));
      await expect.poll(() => alive([forker.pid, ...started]), { timeout: 5000 }).toEqual([]);
      expect(processesUnder(server.home)).toEqual([]);
    } finally {
      await server.close().catch(() => {});
    }
  });
});

describe('forker slots', () => {
  it("takes one connection per slot: a token presented again (a fork's copy of a job) is refused", async () => {
    // A stand-in helper that connects each slot of its job, then stdout a second time with the
    // same token and slot, and reports the child ready once the server has surely had them all.
    const helper = `
import json, os, socket, sys, time
job = json.loads(sys.stdin.readline())
address = job["address"].encode().ljust(108, b"\\0")
def connect(slot, said):
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.connect(address)
    sock.sendall(("%s%04d" % (job["token"], slot)).encode() + said)
    return sock
kept = [connect(slot, b"first %d\\n" % slot) for slot in range(3)]
kept.append(connect(1, b"second 1\\n"))
kept.append(connect(7, b"no such slot\\n"))
time.sleep(0.3)  # every connection is in before the child is
print(json.dumps({"id": job["id"], "ready": os.getpid()}), flush=True)
sys.stdin.read()
`;
    const forker = new Forker('/usr/bin/python3', { args: ['-c', helper], env: {} });
    const child = await forker.launcher(['pipe', 'pipe', 'pipe'], []);
    const stdout = child.stdout as NonNullable<typeof child.stdout>;
    const line = await new Promise<string>((resolve) =>
      stdout.once('data', (chunk: Buffer) => resolve(String(chunk))),
    );
    expect(line).toBe('first 1\n');
    forker.retire();
  });
});

describe.runIf(makesCgroups())('forker under load', () => {
  it('starts concurrent runs beyond the ready launchers through it too: the server never forks a sandbox', async () => {
    const server = await startServer({ env: { ...SANDBOX_ENV, CODEXEC_POOL_SIZE: '0' } });
    try {
      // The sandbox's probe (once, at the first run) starts directly: before the watch.
      const first = await callTool<{ stdout: string }>(server.client, 'execute_code', {
        language: 'bash',
        code: 'echo first',
      });
      expect(first.value.stdout).toBe('first\n');
      // Four launchers wait per one-shot shape. Once all four are ready, eight runs at once take
      // them and four more wait for the next ones the forker makes (one round of starts, which a
      // busy machine still gives within the engine's wait) instead of a start of the server's own
      // (a shell that joins the run cgroup then becomes bwrap, a child of the server).
      await expect.poll(() => forkerOf(server.pid), { timeout: 30_000 }).toBeDefined();
      const forker = (forkerOf(server.pid) as Proc).pid;
      const ready = () =>
        childrenOf(forker).filter((pid) => {
          const argv = argvOf(pid);
          return argv.includes('codexec-launcher') || argv.some((a) => a.endsWith('/drivers/forker.py'));
        }).length;
      await expect.poll(ready, { timeout: 30_000, interval: 50 }).toBeGreaterThanOrEqual(4);
      // The watch reads only the server's own children (/proc/<pid>/task/*/children), not every
      // process: scanning all of /proc this often would itself load the machine. A direct start
      // lives as long as its run (0.4 s at least), so a look every 20 ms sees it.
      const direct = new Set<number>();
      let watching = true;
      const watch = (async () => {
        while (watching) {
          for (const pid of childrenOf(server.pid))
            if (argvOf(pid).some((arg) => arg.endsWith('bwrap') || arg === 'join')) direct.add(pid);
          await new Promise((resolve) => setTimeout(resolve, 20)); // the poll's interval
        }
      })();
      const runs = await Promise.all(
        Array.from({ length: 8 }, (_, i) =>
          callTool<{ stdout: string; warm: boolean }>(server.client, 'execute_code', {
            language: 'bash',
            code: `sleep 0.4; echo run ${i}`,
          }),
        ),
      );
      watching = false;
      await watch;
      expect(runs.map(({ value }) => value.stdout)).toEqual(runs.map((_, i) => `run ${i}\n`));
      expect(runs.every(({ value }) => !value.warm)).toBe(true);
      expect([...direct]).toEqual([]);
    } finally {
      await server.close().catch(() => {});
    }
  });

  // A zygote's bwrap is outside every run cgroup, and the sandbox's pid 1 it cloned has no
  // --die-with-parent until the sandbox is built (CI run 55: one left after a SIGKILLed server).
  it("kills each job's children with it when the server is gone: none is left to the host's init", () => {
    const script = `import subprocess, sys, time
sys.path.insert(0, sys.argv[1])
import forker
job = subprocess.Popen([sys.executable, "-c", "import subprocess, time; print(subprocess.Popen(['sleep', '10']).pid, flush=True); time.sleep(10)"], stdout=subprocess.PIPE)
child = int(job.stdout.readline())
forker.end({job.pid: None}, (), seconds=0.5)
time.sleep(0.2)
try:
    state = open("/proc/%d/stat" % child).read().rsplit(") ", 1)[1][0]
except FileNotFoundError:
    state = "gone"
print(state)`;
    const result = spawnSync('/usr/bin/python3', ['-c', script, packagePath('drivers')], {
      encoding: 'utf8',
    });
    expect(result.status, result.stderr).toBe(0);
    // Killed: gone, or a zombie its new parent has not reaped yet; never sleeping on.
    expect(['gone', 'Z']).toContain(result.stdout.trim());
  });
});
