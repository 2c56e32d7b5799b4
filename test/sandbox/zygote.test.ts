// The zygote (drivers/zygote.py): a root namespace server forks warm Python drivers from one
// pre-initialised interpreter on the host and moves each into its own bwrap-built sandbox. A
// forked run must be confined exactly as a cold run is, end as a cold run does, and leave nothing.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ExecutionResult } from '../../src/engine/index.js';
import type { RunCgroup } from '../../src/sandbox/host/cgroups.js';
import { Zygote } from '../../src/sandbox/host/zygote.js';
import type { SandboxSpec } from '../../src/sandbox/index.js';
import { SANDBOX_ENV, SANDBOX_MODE } from '../helpers/mode.js';
import { processesUnder, processesWith, sleepMarker } from '../helpers/procs.js';
import { sandboxBackend } from '../helpers/sandbox.js';
import { callTool, startServer, type TestServer } from '../helpers/server.js';

const root = process.getuid?.() === 0;
/** The host's device nodes a cold run's bwrap binds into its /dev. */
const DEV_NODES = ['/dev/null', '/dev/zero', '/dev/full', '/dev/random', '/dev/urandom', '/dev/tty'];
const DRIVERS = fileURLToPath(new URL('../../drivers/', import.meta.url));

type Result = ExecutionResult;

// Everything the sandbox decides about a process, as the program itself sees it.
const PROBE = `
import json, os, socket, sys
status = dict(line.rstrip("\\n").split(":\\t", 1) for line in open("/proc/self/status") if ":\\t" in line)
print(json.dumps({
    "forked": "zygote.py" in open("/proc/self/cmdline").read(),
    "ids": [os.getresuid(), os.getresgid(), os.getgroups()],
    "caps": {k: status[k] for k in ("CapPrm", "CapEff", "CapAmb")},
    "kept": [status["CapInh"], status["CapBnd"]],
    "no_new_privs": status["NoNewPrivs"],
    "seccomp": status["Seccomp"],
    # Blocked and ignored signals: none held over from the launcher that forked it.
    "signals": {k: status[k] for k in ("SigBlk", "SigIgn")},
    # Any warm driver starts before its run's timeout is known: its CPU limit is the longest's.
    "limits": [l for l in open("/proc/self/limits") if not l.startswith("Max cpu time")],
    "hostname": socket.gethostname(),
    "net": sorted(line.split(":")[0].strip() for line in open("/proc/net/dev").readlines()[2:]),
    # Per-server and per-run paths aside (the warm driver's file is mounted for every warm run).
    "mounts": sorted(
        line.split()[4].replace(os.getcwd(), "WORKSPACE").replace(os.getcwd().rsplit("/sandbox/", 1)[0], "HOME")
        for line in open("/proc/self/mountinfo")
        if not line.split()[4].endswith("/drivers/warm_python.py")
    ),
    # The parents of the workspace's mount (and, when the checkout is in /tmp, of the driver files
    # bound from it: the warm driver's, a warm run's only, and the figure backend's, any Python
    # run's, whose mount both list above).
    "tmp": len([n for n in os.listdir("/tmp") if not any(
        line.split()[4].startswith("/tmp/%s/" % n) and line.split()[4].endswith("/drivers/warm_python.py")
        for line in open("/proc/self/mountinfo")
    ) and not any(
        line.split()[4].startswith("/tmp/%s/" % n) and line.split()[4].endswith("/drivers/mpl/codexec_figures.py")
        for line in open("/proc/self/mountinfo")
    )]),
    "cgroup": open("/proc/self/cgroup").read(),
    "session_leader": os.getsid(0) == os.getpid(),
    "home_is_cwd": os.environ["HOME"] == os.getcwd(),
    "env": sorted(os.environ),
    "path": sys.path[1:],
    "flags": str(sys.flags),
    "modules": sorted(m for m in ("ctypes", "forker", "zygote", "warm_python", "resource") if m in sys.modules),
    "host_home": os.path.exists("/root"),
    "others": sorted(int(p) for p in os.listdir("/proc") if p.isdigit() and int(p) != os.getpid()),
}))
`;

async function run(server: TestServer, args: Record<string, unknown>): Promise<Result> {
  return (await callTool<Result>(server.client, 'execute_code', { language: 'python', ...args })).value;
}

/** A run served by a driver forked from the zygote (the pool fills in the background). */
async function forkedRun(
  server: TestServer,
  code: string,
  extra: Record<string, unknown> = {},
  timed?: (ms: number) => void,
) {
  for (let i = 0; i < 50; i++) {
    const started = performance.now();
    const value = await run(server, {
      code: `import sys\nif "zygote.py" not in open("/proc/self/cmdline").read(): sys.exit(99)\n${code}`,
      ...extra,
    });
    timed?.(performance.now() - started);
    if (value.exit_code !== 99) return value;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error('no run was forked from the zygote');
}

/** The server's children running `script` (a driver helper: the zygote, the forker). */
const childrenRunning = (server: number, script: string) =>
  readdirSync('/proc')
    .filter((entry) => /^\d+$/.test(entry))
    .filter((entry) => {
      try {
        const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
        const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
        return ppid === server && readFileSync(`/proc/${entry}/cmdline`, 'utf8').includes(script);
      } catch {
        return false;
      }
    })
    .map(Number);
const zygotes = (server: number) => childrenRunning(server, '/drivers/zygote.py');
const helpers = (server: number, script: string) => childrenRunning(server, script).length;

// Namespace mode's zygote (bwrap around a placeholder); landlock mode's forks: landlock.test.ts.
describe.skipIf(!root || SANDBOX_MODE === 'landlock')('zygote (root namespace server)', () => {
  let server: TestServer;
  let cold: TestServer;
  beforeAll(async () => {
    server = await startServer({ env: { ...SANDBOX_ENV, CODEXEC_POOL_SIZE: '2' } });
    cold = await startServer({ env: { ...SANDBOX_ENV, CODEXEC_POOL_SIZE: '0' } });
  });
  afterAll(async () => {
    await Promise.all([server.close(), cold.close()]);
  });

  it('confines a forked run exactly as a cold one: uid, capabilities, seccomp, limits, namespaces, mounts', async () => {
    const forked = JSON.parse((await forkedRun(server, PROBE)).stdout);
    const started = JSON.parse((await run(cold, { code: PROBE })).stdout);
    expect(forked.forked).toBe(true);
    expect(started.forked).toBe(false);
    // Neither keeps an inheritable or bounding capability (a cold run's drop program clears them).
    expect(forked.kept).toEqual(['0000000000000000', '0000000000000000']);
    expect(started.kept).toEqual(forked.kept);
    expect(forked.caps).toEqual({
      CapPrm: '0000000000000000',
      CapEff: '0000000000000000',
      CapAmb: '0000000000000000',
    });
    expect(forked.ids[0]).not.toContain(0);
    // Besides its own, a forked run sees the sandbox's pid 1 alone (the nest, which keeps the
    // sandbox up); a cold run, bwrap's pid 1 and the drop program that reports its end.
    expect(forked.others).toEqual([1]);
    expect(started.others.length).toBe(2);
    // The nest covers /proc/sys read-only besides what bwrap covers (irq, bus), and makes /dev's
    // nodes itself where bwrap binds the host's (test/sandbox/nest.test.ts).
    expect(forked.mounts).toContain('/proc/sys');
    forked.mounts = forked.mounts.filter((mount: string) => mount !== '/proc/sys');
    started.mounts = started.mounts.filter((mount: string) => !DEV_NODES.includes(mount));
    for (const probe of [forked, started]) {
      delete probe.forked;
      delete probe.kept;
      delete probe.others;
    }
    expect(forked).toEqual(started);
    expect(forked.host_home).toBe(false);
    expect(forked.net).toEqual(['lo']);
    expect(forked.seccomp).toBe('2');
    expect(forked.no_new_privs).toBe('1');
    expect(forked.modules).toEqual([]);
  });

  it('keeps the sandbox up with the nest as its pid 1, not bwrap and a placeholder', async () => {
    const seen = await forkedRun(server, 'print(open("/proc/1/stat").read().split(")")[0] + ")")');
    expect(seen.stdout).toBe('1 (nest)\n');
  });

  it('falls back to cat where its placeholder cannot run', () => {
    const probe = (machine: string) =>
      spawnSync(
        '/usr/bin/python3',
        [
          '-c',
          `import os, zygote
real = os.uname()
zygote.os.uname = lambda: type(real)((*real[:4], "${machine}"))
print(zygote.load_placeholder())`,
        ],
        { cwd: DRIVERS, encoding: 'utf8' },
      );
    expect(probe('aarch64').stdout).toBe('None\n');
    expect(probe('x86_64').stdout).toBe(process.arch === 'x64' ? '250\n' : 'None\n');
  });

  it('fails a fork whose sandbox does not start, leaves nothing, and serves the next', async () => {
    const zygote = new Zygote(
      '/usr/bin/python3',
      { PATH: '/usr/bin:/bin', PYTHONDONTWRITEBYTECODE: '1' },
      60_000,
    );
    const noCgroup = { dirs: [] } as unknown as RunCgroup;
    const sandbox = { placeholder: ['/bin/cat', '-'], uid: 65534, gid: 65534, env: {}, cwd: '/' };
    const fork = (bwrap: string[]) =>
      zygote.fork({ stdin: 'ignore', control: false }, noCgroup, { ...sandbox, bwrap }, Buffer.alloc(0), []);
    await expect(fork(['/bin/false'])).rejects.toThrow(/the sandbox did not start \(bwrap: 1\)/);
    await expect(fork(['/nonexistent/bwrap'])).rejects.toThrow(/the sandbox did not start: .*No such file/);
    // A "sandbox" with no pid 1 to join: sh says it is ready, then waits for its stdin to end.
    await expect(fork(['/bin/sh', '-c', 'echo ready; exec cat', 'sh'])).rejects.toThrow(
      /could not fork into the sandbox/,
    );
    // Each went, bwrap or not (nothing was forked), and the zygote still serves.
    const [pid] = zygotes(process.pid);
    const children = () => readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim();
    await expect.poll(children).toBe('');
    await expect(fork(['/bin/false'])).rejects.toThrow(/the sandbox did not start/);
    zygote.retire();
    await expect.poll(() => zygotes(process.pid)).toEqual([]);
  });

  it('ends like a cold run: exit status, SIGTERM grace on timeout, background processes killed', async () => {
    const status = await forkedRun(server, 'print("out")\nimport sys\nsys.exit(7)');
    expect(status).toMatchObject({ stdout: 'out\n', exit_code: 7, warm: true });

    const graceful = await forkedRun(
      server,
      'import signal, sys, time\nsignal.signal(signal.SIGTERM, lambda *_: (print("term", flush=True), sys.exit(3)))\nprint("up", flush=True)\ntime.sleep(60)',
      { timeout_ms: 1500 },
    );
    expect(graceful).toMatchObject({ stdout: 'up\nterm\n', timed_out: true });

    const marker = sleepMarker();
    const left = await forkedRun(
      server,
      `import subprocess\nsubprocess.Popen(["sleep", "${marker}"], start_new_session=True)\nprint("left")`,
    );
    expect(left).toMatchObject({ stdout: 'left\n', exit_code: 0 });
    await expect.poll(() => processesWith(marker), { timeout: 5000 }).toEqual([]);
  });

  it('a background process writes nothing once the result is out: the files are the artifacts', async () => {
    // It writes a new file every millisecond for 10 s, detached from the run's session.
    const code = [
      'import os, subprocess, sys, time',
      "loop = \"import os, time\\nfor i in range(10000):\\n    open('f%05d' % i, 'w').close()\\n    time.sleep(0.001)\"",
      'subprocess.Popen([sys.executable, "-c", loop], start_new_session=True)',
      'while not os.path.exists("f00010"): time.sleep(0.001)',
    ].join('\n');
    const value = await forkedRun(server, code);
    expect(value.exit_code).toBe(0);
    // A loop that outlived the run would go on making files: this pause is the time it is given.
    await new Promise((resolve) => setTimeout(resolve, 300));
    const files = readdirSync(value.working_dir).filter((name) => name.startsWith('f'));
    expect(files.length).toBeGreaterThanOrEqual(10);
    expect(value.artifacts.map((path) => path.split('/').at(-1)).sort()).toEqual(files.sort());
  });

  it('ends promptly, output whole, when the program closes the driver’s copies of stdout and stderr', async () => {
    // No end mark can follow the output then; the run's stopped processes would keep the streams
    // open until they are killed, 500 ms on (the drain's bound) unless the run kills them first.
    const code = 'import os\nprint("out", flush=True)\nos.close(201)\nos.close(202)';
    let took = Number.POSITIVE_INFINITY;
    const value = await forkedRun(server, code, {}, (ms) => {
      took = ms;
    });
    expect(value).toMatchObject({ stdout: 'out\n', exit_code: 0, warm: true });
    expect(took).toBeLessThan(400);
  });

  it("enforces the run's memory limit on a forked run", async () => {
    const value = await forkedRun(server, 'x = bytearray(1024 * 1024 * 2048)\nprint(len(x))');
    expect(value.success).toBe(false);
    expect(value.limit).toBe('memory');
  });

  it('under load (8 at once, a pool of 2) every run waits for a fork rather than starting cold', async () => {
    await forkedRun(server, 'pass');
    const code = 'print("zygote.py" in open("/proc/self/cmdline").read())';
    const runs = await Promise.all(
      Array.from({ length: 8 }, async () => {
        const seen: string[] = [];
        for (let i = 0; i < 6; i++) {
          const value = await run(server, { code });
          seen.push(`${value.warm}:${value.stdout.trim()}`);
        }
        return seen;
      }),
    );
    expect(runs.flat()).toEqual(Array(48).fill('true:True'));
  });

  it('lets its launchers and then itself go when idle, and forks again on the next run', async () => {
    const idle = await startServer({
      env: { ...SANDBOX_ENV, CODEXEC_POOL_SIZE: '2', CODEXEC_POOL_IDLE_MS: '1000' },
    });
    try {
      await forkedRun(idle, 'print(1)');
      const [zygote] = zygotes(idle.pid);
      const launchers = () => {
        try {
          return readFileSync(`/proc/${zygote}/task/${zygote}/children`, 'utf8').split(' ').filter(Boolean)
            .length;
        } catch {
          return 0; // the zygote is gone too
        }
      };
      await expect.poll(launchers, { timeout: 5000 }).toBeGreaterThan(0);
      // The pool's waiting drivers and the ready launchers, all forks of the zygote, go; then the
      // zygote itself and the forker of the other launchers.
      await expect.poll(launchers, { timeout: 5000, interval: 100 }).toBe(0);
      await expect.poll(() => zygotes(idle.pid).length, { timeout: 5000, interval: 100 }).toBe(0);
      await expect.poll(() => helpers(idle.pid, '/drivers/forker.py'), { timeout: 5000 }).toBe(0);
      expect(
        await run(idle, { code: 'print("zygote.py" in open("/proc/self/cmdline").read())' }),
      ).toMatchObject({ warm: true, stdout: 'True\n' });
      expect(zygotes(idle.pid)).toHaveLength(1);
    } finally {
      await idle.close();
    }
  });

  it("reaps a program's process at once when its sandbox is killed (not left to the host's init)", async () => {
    await forkedRun(server, 'pass');
    const [zygote] = zygotes(server.pid);
    // A process listed may be gone when it is looked at (the pool replaces its drivers): '' then.
    const gone = <T>(read: () => T, otherwise: T) => {
      try {
        return read();
      } catch {
        return otherwise;
      }
    };
    const childrenOf = (pid: number) =>
      gone(() => readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8'), '')
        .split(' ')
        .filter(Boolean)
        .map(Number);
    const cmdline = (pid: number) => gone(() => readFileSync(`/proc/${pid}/cmdline`, 'utf8'), '');
    const nsPid = (pid: number) => gone(() => readlinkSync(`/proc/${pid}/ns/pid`), `gone ${pid}`);
    // A waiting pool driver, and its sandbox: the nest whose child (the pid 1) shares its pid
    // namespace. The zygote's children are both.
    const found = () => {
      const children = childrenOf(zygote as number);
      const program = children.find((pid) => cmdline(pid).includes('zygote.py'));
      const sandbox = children.find(
        (pid) =>
          program !== undefined &&
          cmdline(pid).includes('/nest\0run') &&
          childrenOf(pid).some((leader) => nsPid(leader) === nsPid(program)),
      );
      return program && sandbox ? ([sandbox, program] as const) : undefined;
    };
    await expect.poll(found).toBeDefined();
    const [sandbox, program] = found() as readonly [number, number];
    process.kill(sandbox, 'SIGKILL');
    // The program dies with its sandbox's pid namespace and the zygote reaps it. (Left to the
    // host's init, it would linger: 2 s only allows for a loaded machine.)
    await expect
      .poll(() => readdirSync('/proc').includes(String(program)), { timeout: 2000, interval: 20 })
      .toBe(false);
  });

  it('dies with a SIGKILLed server, with its launchers and their sandboxes', async () => {
    const doomed = await startServer({ env: { ...SANDBOX_ENV, CODEXEC_POOL_SIZE: '2' } });
    try {
      await forkedRun(doomed, 'print(1)');
      const [zygote] = zygotes(doomed.pid);
      expect(zygote).toBeDefined();
      await expect.poll(() => processesUnder(doomed.home).length, { timeout: 5000 }).toBeGreaterThan(0);
      process.kill(doomed.pid, 'SIGKILL');
      const alive = () => readdirSync('/proc').includes(String(zygote));
      await expect.poll(alive, { timeout: 5000 }).toBe(false);
      await expect.poll(() => processesUnder(doomed.home), { timeout: 5000 }).toEqual([]);
    } finally {
      await doomed.close().catch(() => {});
    }
  });
});

describe.skipIf(!root || SANDBOX_MODE === 'landlock')('zygote, driven directly', () => {
  // Its zygote and launchers go after 1 s idle (and die with this process anyway).
  const backend = sandboxBackend({ idleMs: 1000 });
  const dir = mkdtempSync(join(tmpdir(), 'codexec-zygote-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  // Seen under load as a Python run failing to read its own script (PermissionError): a fork
  // slower than the wait gave the workspace back to root when it came, under the sandbox started
  // instead, which had found the workspace already lent.
  it('a fork that comes too late leaves the workspace lent to the sandbox started instead', async () => {
    const driver = join(DRIVERS, 'warm_python.py');
    const spec: SandboxSpec = {
      argv: ['/usr/bin/python3', driver],
      cwd: dir,
      env: { PATH: '/usr/bin:/bin', PYTHONUNBUFFERED: '1' },
      writablePaths: [dir],
      readablePaths: [driver],
      limits: { memoryMb: 256, maxProcs: 32, maxFileMb: 8 },
      network: 'none',
      stdin: 'ignore',
      control: true,
      zygote: 'prefer',
    };
    await backend.reserveFork(spec, 0); // gives up at once: the fork comes later
    const proc = backend.spawn(spec); // the sandbox started instead
    try {
      const lent = statSync(dir).uid;
      expect(lent).not.toBe(0);
      // The late fork comes and is released meanwhile (a fork takes well under a second here).
      for (const deadline = Date.now() + 3000; Date.now() < deadline && statSync(dir).uid === lent; )
        await sleep(50);
      expect(statSync(dir).uid).toBe(lent);
    } finally {
      proc.kill('SIGKILL');
      await proc.dispose();
    }
    expect(statSync(dir).uid).toBe(0); // given back once
  });
});
