import { spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmdirSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { type CgroupLayout, type RunCgroup, RunCgroups } from '../../src/sandbox/host/cgroups.js';
import { NamespaceBackend, type SandboxBackend, type SandboxSpec } from '../../src/sandbox/index.js';
import { isRunUid } from '../../src/sandbox/landlock/uids.js';
import { DROP_NAME, dropProgram } from '../../src/sandbox/namespace/drop.js';
import { packagePath } from '../../src/util/index.js';
import { IS_ROOT, SANDBOX_MODE } from '../helpers/mode.js';
import { makesCgroups, probed, sandboxBackend } from '../helpers/sandbox.js';
import { output } from '../helpers/sandboxed.js';

// The backend itself, driven directly (the MCP-level hostile suite is in test/hostile/), in the
// mode under test (test/helpers/mode.ts).
const backend = sandboxBackend();
const cgroups = makesCgroups();
const dirs: string[] = [];
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

function workspace(): string {
  const dir = mkdtempSync(join(tmpdir(), 'codexec-ns-'));
  dirs.push(dir);
  return dir;
}

/** A warm python driver's files: in the drivers' directory and a directory below it. */
const DRIVER_FILES = ['warm_python.py', 'mpl/codexec_figures.py', 'mpl/sitecustomize.py'].map((file) =>
  packagePath('drivers', ...file.split('/')),
);

function spec(dir: string, argv: string[], extra: Partial<SandboxSpec> = {}): SandboxSpec {
  return {
    argv,
    cwd: dir,
    env: { PATH: '/usr/bin:/bin' },
    writablePaths: [dir],
    readablePaths: [],
    limits: { memoryMb: 128, maxProcs: 32, maxFileMb: 8 },
    network: 'none',
    stdin: 'ignore',
    ...extra,
  };
}

describe('NamespaceBackend', () => {
  it('probes available on this Linux host (bubblewrap installed by .ci/run)', async () => {
    expect(await backend.probe()).toEqual({ available: true });
  });

  it.each([
    ['forked by the forker (setrlimit)', backend],
    ['started as bash (ulimit)', sandboxBackend({ forker: false })],
  ])('sets the same rlimits with launchers %s as with prlimit (a direct start)', async (_kind, sandbox) => {
    await sandbox.probe(); // runs start after it (a root landlock server's claims their uids)
    const dir = workspace();
    const read = async () => {
      const run = sandbox.spawn(
        spec(dir, ['/bin/cat', '/proc/self/limits'], {
          limits: { memoryMb: 128, maxProcs: 32, maxFileMb: 8, cpuSeconds: 17 },
        }),
      );
      const { exit, stdout } = await output(run);
      expect(exit.code).toBe(0);
      const row = (name: string) =>
        stdout
          .split('\n')
          .find((line) => line.startsWith(name))
          ?.split(/\s{2,}/);
      return [
        'Max cpu time',
        'Max file size',
        'Max open files',
        'Max core file size',
        'Max address space',
      ].map((name) => row(name)?.slice(1, 3));
    };
    // Spaced out so that launchers are ready for the later runs; the first has none yet.
    const seen = [];
    for (let i = 0; i < 4; i++) {
      seen.push(await read());
      await new Promise((resolve) => setTimeout(resolve, 300));
    }
    expect(seen[0]).toEqual([
      ['17', '17'],
      [String(8 * 1024 * 1024), String(8 * 1024 * 1024)],
      ['1024', '1024'],
      ['0', '0'],
      [String(64 * 1024 ** 3), String(64 * 1024 ** 3)],
    ]);
    for (const limits of seen) expect(limits).toEqual(seen[0]);
  });

  it('keeps fd 3 as a control channel separate from stdout', async () => {
    const dir = workspace();
    const proc = backend.spawn(
      spec(dir, ['/bin/sh', '-c', 'read -r line <&3; echo "ack:$line" >&3; echo out'], { control: true }),
    );
    proc.control?.write('ping\n');
    let control = '';
    proc.control?.on('data', (chunk: Buffer) => (control += chunk));
    const { exit, stdout } = await output(proc);
    expect(exit.code).toBe(0);
    expect(stdout).toBe('out\n');
    expect(control).toBe('ack:ping\n');
  });

  it('SIGTERM reaches the code (grace period), SIGKILL ends the whole sandbox', async () => {
    const dir = workspace();
    const proc = backend.spawn(
      spec(dir, ['/bin/bash', '-c', 'trap "echo term; exit 7" TERM; echo ready; sleep 30 & wait']),
    );
    let stdout = '';
    proc.stdout.on('data', (chunk: Buffer) => (stdout += chunk));
    await new Promise<void>((resolve) => proc.stdout.once('data', () => resolve()));
    proc.kill('SIGTERM');
    const [exit] = await Promise.all([
      proc.exited,
      new Promise((resolve) => proc.stdout.once('end', resolve)),
    ]);
    await proc.dispose();
    expect(stdout).toContain('term');
    expect(exit.code).toBe(7);
  });

  it.runIf(process.getuid?.() === 0)(
    'as root: runs as uid 65534 (landlock: a uid of the run’s own), lends the workspace, then gives it back',
    async () => {
      const dir = workspace();
      chmodSync(dir, 0o700);
      writeFileSync(join(dir, 'input.txt'), 'data');
      const proc = backend.spawn(spec(dir, ['/bin/sh', '-c', 'id -u; cat input.txt; echo made > out.txt']));
      const { exit, stdout } = await output(proc);
      expect(exit.code).toBe(0);
      const [uid, data] = stdout.split('\n');
      expect(data).toBe('data');
      if (SANDBOX_MODE === 'landlock') expect(isRunUid(Number(uid))).toBe(true);
      else expect(uid).toBe('65534');
      for (const name of ['.', 'input.txt', 'out.txt']) expect(statSync(join(dir, name)).uid).toBe(0);
    },
  );

  // The drop program is namespace mode's (landlock's launcher drops in its script: landlock.test.ts).
  it.runIf(SANDBOX_MODE === 'namespace' && process.getuid?.() === 0 && process.arch === 'x64')(
    'as root: drops to the sandbox user with the drop program, or setpriv when told not to',
    async () => {
      // The sandbox's pid 1 is a fork of bwrap: its command line is the run's.
      const started = async (sandbox: SandboxBackend) => {
        const { exit, stdout } = await output(
          sandbox.spawn(spec(workspace(), ['/bin/cat', '/proc/1/cmdline'])),
        );
        expect(exit.code).toBe(0);
        return stdout.split('\0');
      };
      const dropped = await started(backend);
      const at = dropped.indexOf(`/etc/${DROP_NAME}`);
      expect(dropped.slice(at, at + 5)).toEqual([
        `/etc/${DROP_NAME}`,
        '65534',
        '65534',
        '/bin/cat',
        '/proc/1/cmdline',
      ]);
      expect(dropped.some((arg) => arg.endsWith('/setpriv'))).toBe(false);
      const withSetpriv = await started(await probed(sandboxBackend({ drop: false })));
      expect(withSetpriv.some((arg) => arg.endsWith('/setpriv'))).toBe(true);
      expect(withSetpriv).not.toContain(`/etc/${DROP_NAME}`);
    },
  );

  it.runIf(process.getuid?.() === 0)(
    'as root: every capability set is empty, through the drop program and through setpriv',
    async () => {
      for (const sandbox of [backend, await probed(sandboxBackend({ drop: false }))]) {
        const { exit, stdout } = await output(
          sandbox.spawn(spec(workspace(), ['/bin/grep', '^Cap', '/proc/self/status'])),
        );
        expect(exit.code).toBe(0);
        expect(stdout.split('\n').filter(Boolean)).toEqual(
          ['CapInh', 'CapPrm', 'CapEff', 'CapBnd', 'CapAmb'].map((name) => `${name}:\t0000000000000000`),
        );
      }
    },
  );

  // Mounts are namespace mode's; landlock mode reads the host's /etc entries in place (landlock.test.ts).
  it.skipIf(SANDBOX_MODE === 'landlock')(
    'shows the same /etc from one copy as from a bind per entry (but what the sandbox cannot read), in one mount',
    async () => {
      // Every entry's path, type, mode and content (or link target), then the mounts under /etc.
      const probe = [
        '/usr/bin/python3',
        '-c',
        `import hashlib, os, stat
for root, dirs, files in sorted(os.walk("/etc")):
    for name in sorted(dirs + files):
        path = os.path.join(root, name)
        mode = os.lstat(path).st_mode
        what = os.readlink(path) if stat.S_ISLNK(mode) else hashlib.sha1(open(path, "rb").read()).hexdigest() if stat.S_ISREG(mode) else ""
        print(path, oct(mode), what)
print("mounts", sorted(l.split()[4] for l in open("/proc/self/mountinfo") if l.split()[4].startswith("/etc")))`,
      ];
      const binds = await probed(sandboxBackend({ etcCopy: false }));
      const copied = await output(backend.spawn(spec(workspace(), probe)));
      const bound = await output(binds.spawn(spec(workspace(), probe)));
      expect(copied.exit.code).toBe(0);
      expect(bound.exit.code).toBe(0);
      const [files, mounts] = copied.stdout.split('mounts ');
      // A root server's copy holds one file of codexec's own besides: the drop program (drop.ts).
      const lines = (files as string).split('\n');
      const own = lines.filter((line) => line.startsWith(`/etc/${DROP_NAME} `));
      const program = process.getuid?.() === 0 ? dropProgram() : undefined;
      const digest = program && createHash('sha1').update(program).digest('hex');
      expect(own).toEqual(digest ? [`/etc/${DROP_NAME} 0o100555 ${digest}`] : []);
      // What the sandbox's user cannot read is never copied (TLS private keys' 0700 directory).
      const readable = (bound.stdout.split('mounts ')[0] as string).replace(/^\/etc\/ssl\/private .*\n/m, '');
      expect(lines.filter((line) => !own.includes(line)).join('\n')).toBe(readable);
      expect(files).toContain('/etc/ld.so.cache ');
      expect(files).not.toMatch(/\/etc\/(shadow|passwd|hostname|machine-id) /);
      expect(files).toMatch(/^\/etc\/ssl\/certs\/ca-certificates\.crt /m);
      expect(files).toMatch(/^\/etc\/alternatives\/\S+ 0o120777 \//m);
      // The TLS roots and alternatives are in the copy: only Red Hat's large /etc/pki stays bound.
      const kept = ['/etc/pki'].filter((path) => existsSync(path));
      expect(JSON.parse((mounts as string).replaceAll("'", '"'))).toEqual(['/etc', ...kept]);
    },
  );

  it.skipIf(SANDBOX_MODE === 'landlock')(
    'shows the same driver files from one copy as from a bind per file, in one mount',
    async () => {
      const drivers = dirname(DRIVER_FILES[0] as string);
      const probe = [
        '/usr/bin/python3',
        '-c',
        `import hashlib, os, stat, sys
for root, dirs, files in sorted(os.walk(sys.argv[1])):
    for name in sorted(dirs + files):
        path = os.path.join(root, name)
        mode = os.lstat(path).st_mode
        print(path, oct(mode), hashlib.sha1(open(path, "rb").read()).hexdigest() if stat.S_ISREG(mode) else "")
print("mounts", sorted(l.split()[4] for l in open("/proc/self/mountinfo") if l.split()[4].startswith(sys.argv[1])))`,
        drivers,
      ];
      const each = await probed(sandboxBackend({ driverCopy: false }));
      const readable = { readablePaths: DRIVER_FILES };
      const copied = await output(backend.spawn(spec(workspace(), probe, readable)));
      const bound = await output(each.spawn(spec(workspace(), probe, readable)));
      expect(copied.exit.code).toBe(0);
      expect(bound.exit.code).toBe(0);
      const [files, mounts] = copied.stdout.split('mounts ');
      const [boundFiles, boundMounts] = bound.stdout.split('mounts ');
      // The same files, content and all (modes aside: a copy is read-only for all), nothing else.
      const unmoded = (text: string | undefined) => text?.replace(/ 0o\d+ /g, ' ');
      expect(unmoded(files)).toBe(unmoded(boundFiles));
      expect((files as string).trim().split('\n')).toHaveLength(DRIVER_FILES.length + 1); // and mpl/
      expect(JSON.parse((mounts as string).replaceAll("'", '"'))).toEqual([drivers]);
      expect(JSON.parse((boundMounts as string).replaceAll("'", '"'))).toHaveLength(DRIVER_FILES.length);
    },
  );

  it.runIf(cgroups)('reports a memory limit hit and removes every cgroup it created', async () => {
    const before = cgroupChildren();
    const dir = workspace();
    const proc = backend.spawn(spec(dir, ['/usr/bin/python3', '-c', 'b = bytearray(512 * 1024 * 1024)']));
    const { exit } = await output(proc);
    expect(exit.code).toBe(137);
    expect(exit.limit).toBe('memory');
    // New cgroups may only be pre-started launchers (a bash waiting inside), never an empty leftover
    // (the run's own is removed just after its end: polled).
    const leftovers = () => cgroupChildren().filter((dir) => !before.includes(dir) && members(dir) === 0);
    await expect.poll(leftovers, { timeout: 10_000 }).toEqual([]);
  });

  // Without cgroups (an ordinary user's server) RLIMIT_DATA holds the memory limit instead: the
  // allocation fails in the program, which ends as it chooses (no kill, so no limit is reported).
  it.runIf(!cgroups)('holds the memory limit without cgroups (RLIMIT_DATA)', async () => {
    const dir = workspace();
    const code = 'b = bytearray(512 * 1024 * 1024)';
    const { exit, stderr } = await output(backend.spawn(spec(dir, ['/usr/bin/python3', '-c', code])));
    expect(exit.code).toBe(1);
    expect(stderr).toMatch(/MemoryError\n$/);
    const fits = await output(
      backend.spawn(spec(dir, ['/usr/bin/python3', '-c', 'b = bytearray(64 * 1024 * 1024); print("ok")'])),
    );
    expect(fits.stdout).toBe('ok\n');
  });

  // An ordinary user's server without cgroups: RLIMIT_NPROC, set inside the sandbox's user
  // namespace, bounds the run's processes (32 + bwrap's init) and counts none of the user's others.
  // (landlock mode has no user namespace to count in: without cgroups nothing bounds its processes
  // but the timeout, which docs/security.md states.)
  it.runIf(SANDBOX_MODE === 'namespace' && !IS_ROOT && !cgroups && backend.setup().nprocPerUserNamespace)(
    "bounds a run's processes without cgroups, counting none of the user's others",
    async () => {
      const others = Array.from({ length: 40 }, () => spawn('sleep', ['30'], { stdio: 'ignore' }));
      try {
        // Forks until refused (EAGAIN); the children wait.
        const code =
          'import os, time\nn = 0\ntry:\n    for _ in range(60):\n        if os.fork() == 0:\n' +
          '            time.sleep(5)\n            os._exit(0)\n        n += 1\nexcept BlockingIOError:\n    pass\nprint(n)';
        const { exit, stdout } = await output(
          backend.spawn(spec(workspace(), ['/usr/bin/python3', '-c', code])),
        );
        expect(exit.code).toBe(0);
        // The run's 32 processes: python and 31 children. Counted with the user's 40 others, not
        // one fork would have been allowed.
        expect(Number(stdout)).toBe(31);
      } finally {
        for (const other of others) other.kill('SIGKILL');
      }
    },
  );
});

// Launchers wait inside fresh run cgroups: a server without cgroups starts every run directly.
describe.runIf(cgroups)('pre-started launchers', () => {
  it('runs started from a launcher get the run limits and stay inside the cgroup', async () => {
    const dir = workspace();
    const run = async (code: string) => {
      // Let the launcher for this shape be refilled between runs.
      await new Promise((resolve) => setTimeout(resolve, 300));
      return output(backend.spawn(spec(dir, ['/usr/bin/python3', '-c', code])));
    };
    // 100 MB fits the run's 128 MB but not a launcher's idle limit: the run limits were applied.
    const fits = await run(
      'b = bytearray(100 * 1024 * 1024); b[::4096] = b"x" * len(b[::4096]); print("ok")',
    );
    expect(fits.stdout).toBe('ok\n');
    for (let i = 0; i < 2; i++) {
      const { exit } = await run('b = bytearray(512 * 1024 * 1024)');
      expect(exit).toMatchObject({ code: 137, limit: 'memory' });
    }
  });

  it('a session-shaped launcher (socket stdin) runs no host shell startup files', async () => {
    const dir = workspace();
    for (let i = 0; i < 3; i++) {
      await new Promise((resolve) => setTimeout(resolve, 300));
      const proc = backend.spawn(spec(dir, ['/bin/true'], { stdin: 'pipe', control: true }));
      proc.stdin?.end();
      const { exit, stderr } = await output(proc);
      expect({ code: exit.code, stderr }).toEqual({ code: 0, stderr: '' });
    }
  });
});

function members(dir: string): number {
  return readFileSync(join(dir, 'cgroup.procs'), 'utf8').split('\n').filter(Boolean).length;
}

function cgroupChildren(): string[] {
  const layout = backend.setup().cgroups;
  if (!layout) return [];
  // Only this process's runs: servers of other test files share the parent cgroup.
  const ours = `codexec-run-${process.pid}-`;
  return [layout.memory, layout.pids].flatMap((dir) =>
    readdirSync(dir)
      .filter((name) => name.startsWith(ours))
      .map((name) => join(dir, name)),
  );
}

describe('cgroup leftovers', () => {
  it.runIf(backend.setup().cgroups !== undefined)(
    'a new server removes the run cgroups of dead servers, and their parents',
    async () => {
      const layout = backend.setup().cgroups;
      if (!layout) return;
      // Runs live in their server's parent (codexec-runs-<pid>), beside which older servers made them.
      const server = dirname(layout.memory);
      const gone = spawnSync('/bin/true').pid as number; // a pid that has exited
      const deadParent = join(server, `codexec-runs-${gone}`);
      const deadRun = join(deadParent, `codexec-run-${gone}-deadbeef`);
      const legacy = join(server, `codexec-run-${gone}-deadbeef`);
      const ours = join(layout.memory, `codexec-run-${process.pid}-cafecafe`);
      for (const dir of [deadParent, deadRun, legacy, ours]) mkdirSync(dir);
      try {
        new NamespaceBackend().setup();
        for (const dir of [deadRun, deadParent, legacy]) expect(existsSync(dir)).toBe(false);
        expect(existsSync(ours)).toBe(true); // its server (this process) is alive
      } finally {
        for (const dir of [deadRun, deadParent, legacy, ours]) if (existsSync(dir)) rmdirSync(dir);
      }
    },
  );
});

describe('run cgroups', () => {
  const layout = backend.setup().cgroups;

  /** Run `code` in `cgroup` (joined before it starts), to its end. */
  async function runIn(cgroup: RunCgroup, code: string, cwd = tmpdir()): Promise<number | null> {
    const child = spawn('/bin/sh', ['-c', 'read go; exec /usr/bin/python3 -c "$0"', code], { cwd });
    await cgroup.join(child.pid as number);
    child.stdin.end('go\n');
    return new Promise((resolve) => child.once('exit', (code) => resolve(code)));
  }

  it.runIf(layout !== undefined)('an emptied cgroup serves the next run, limits set anew', async () => {
    const cgroups = new RunCgroups(layout as CgroupLayout);
    const first = cgroups.create({ memoryMb: 64, maxProcs: 16 });
    expect(await runIn(first, 'b = bytearray(8 * 1024 * 1024)')).toBe(0);
    expect(await cgroups.release(first)).toBe(true);
    const second = cgroups.create({ memoryMb: 32, maxProcs: 8 });
    try {
      expect(second.dirs).toEqual(first.dirs);
      expect(second.limitHit()).toBeUndefined();
      expect(
        readFileSync(join((second.dirs[1] ?? second.dirs[0]) as string, 'pids.max'), 'utf8').trim(),
      ).toBe('8');
      // The new memory limit holds: 48 MB no longer fits.
      expect(await runIn(second, 'b = bytearray(48 * 1024 * 1024); b[::4096] = b"x" * len(b[::4096])')).toBe(
        null,
      );
      expect(second.limitHit()).toBe('memory');
    } finally {
      expect(await cgroups.release(second)).toBe(false);
    }
    for (const dir of first.dirs) expect(existsSync(dir)).toBe(false);
  });

  it.runIf(layout !== undefined)('a cgroup still charged with a run’s page cache is removed', async () => {
    const cgroups = new RunCgroups(layout as CgroupLayout);
    const cgroup = cgroups.create({ memoryMb: 64, maxProcs: 16 });
    const dir = workspace();
    expect(await runIn(cgroup, 'open("big", "wb").write(b"x" * 16 * 1024 * 1024)', dir)).toBe(0);
    expect(await cgroups.release(cgroup)).toBe(false);
    for (const path of cgroup.dirs) expect(existsSync(path)).toBe(false);
  });

  // v1 keeps a cgroup's memory peak from its creation: a reused one's must start again, or a run
  // killed by CODEXEC_TOTAL_MEMORY_MB is told it reached its own limit (hitTotal).
  it.runIf(layout?.version === 1)('a reused cgroup’s memory peak is its next run’s (v1)', async () => {
    const cgroups = new RunCgroups(layout as CgroupLayout);
    const first = cgroups.create({ memoryMb: 32, maxProcs: 16 });
    const dir = workspace();
    writeFileSync(join(dir, 'big'), Buffer.alloc(64 * 1024 * 1024));
    // Read through the page cache, charged to the run up to its limit (reclaimed there: no OOM),
    // then let go, so the emptied cgroup holds too little to be removed.
    const read =
      'import os\nfd = os.open("big", os.O_RDONLY)\nos.fsync(fd)\n' +
      'os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)\n' +
      'while os.read(fd, 1 << 20): pass\n' +
      'os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)';
    expect(await runIn(first, read, dir)).toBe(0);
    const peak = () => Number(readFileSync(join(first.dirs[0] ?? '', 'memory.max_usage_in_bytes'), 'utf8'));
    expect(peak()).toBeGreaterThan(31 * 1024 * 1024);
    expect(first.hitTotal('memory')).toBe(false); // it did come near its own limit
    expect(await cgroups.release(first)).toBe(true);
    const second = cgroups.create({ memoryMb: 32, maxProcs: 16 });
    try {
      expect(second.dirs).toEqual(first.dirs);
      expect(peak()).toBeLessThan(2 * 1024 * 1024);
      expect(second.hitTotal('memory')).toBe(true);
    } finally {
      await cgroups.release(second);
    }
  });
});
