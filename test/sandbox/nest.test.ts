// The nest (native/nest.c, src/sandbox/namespace/nest.ts): a zygote run's sandbox copied from a
// template mount namespace that every run of the zygote shares. What is shared must be read-only
// and hold nothing of a run's; what is a run's (/tmp, /dev/shm, /dev/pts, its workspace, its
// processes) must be its own; a template that cannot be made leaves the sandbox to bwrap.
import { chmodSync, existsSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ExecutionResult } from '../../src/engine/index.js';
import type { RunCgroup } from '../../src/sandbox/host/cgroups.js';
import { NEST, Zygote } from '../../src/sandbox/host/zygote.js';
import type { FsOp } from '../../src/sandbox/namespace/args.js';
import { nestPlan } from '../../src/sandbox/namespace/nest.js';
import { SANDBOX_ENV, SANDBOX_MODE } from '../helpers/mode.js';
import { callTool, startServer, type TestServer } from '../helpers/server.js';

const root = process.getuid?.() === 0;
const N = '/nest';
const system: FsOp[] = [
  { op: 'ro-bind', source: '/usr', path: '/usr' },
  { op: 'symlink', target: 'usr/bin', path: '/bin' },
  { op: 'ro-bind', source: '/tmp/etc-copy/1', path: '/etc' },
  { op: 'proc', path: '/proc' },
  { op: 'dev', path: '/dev' },
  { op: 'tmpfs', mode: '1777', bytes: '1024', path: '/tmp' },
  { op: 'tmpfs', mode: '1777', bytes: '1024', path: '/dev/shm' },
];

describe('nestPlan', () => {
  it('puts what runs share in the template and what is a run’s in its own part', () => {
    const plan = nestPlan(
      N,
      [
        ...system,
        { op: 'dir', path: '/home/x/.codexec/sandbox' },
        { op: 'bind', source: '/home/x/.codexec/sandbox/e1', path: '/home/x/.codexec/sandbox/e1' },
      ],
      true,
    );
    expect(plan?.template).toEqual([
      N,
      'template',
      ...['ro-bind', '/usr', '/usr', 'symlink', 'usr/bin', '/bin', 'ro-bind', '/tmp/etc-copy/1', '/etc'],
      ...['dir', '/proc', 'dev', '/dev', 'dir', '/tmp', 'dir', '/home/x/.codexec/sandbox'],
      ...['dir', '/home/x/.codexec/sandbox'],
    ]);
    // The workspace's mount point is made in a small tmpfs of the run's own over its parent.
    expect(plan?.run).toEqual([
      N,
      'run',
      ...['net', 'proc', '/proc', 'devpts', '/dev/pts', 'tmpfs', '1777', '1024', '/tmp'],
      ...['tmpfs', '1777', '1024', '/dev/shm', 'cover', '/home/x/.codexec/sandbox'],
      ...['bind', '/home/x/.codexec/sandbox/e1', '/home/x/.codexec/sandbox/e1'],
    ]);
  });

  it('makes a workspace under /tmp in the run’s own /tmp; no network namespace for the host’s', () => {
    const plan = nestPlan(
      N,
      [...system, { op: 'dir', path: '/tmp/s' }, { op: 'bind', source: '/tmp/s/e1', path: '/tmp/s/e1' }],
      false,
    );
    expect(plan?.run.slice(2)).toEqual([
      ...['proc', '/proc', 'devpts', '/dev/pts', 'tmpfs', '1777', '1024', '/tmp'],
      ...['tmpfs', '1777', '1024', '/dev/shm', 'dir', '/tmp/s', 'bind', '/tmp/s/e1', '/tmp/s/e1'],
    ]);
  });

  it('makes in the run’s own /tmp what lies there: a checkout’s drivers, links', () => {
    const plan = nestPlan(
      N,
      [
        ...system,
        { op: 'dir', path: '/tmp/checkout' },
        { op: 'ro-bind', source: '/tmp/views/1', path: '/tmp/checkout/drivers' },
        { op: 'symlink', target: 'x', path: '/tmp/l' },
      ],
      true,
    );
    expect(plan?.run.slice(-8)).toEqual([
      ...['dir', '/tmp/checkout', 'ro-bind', '/tmp/views/1', '/tmp/checkout/drivers'],
      ...['symlink', 'x', '/tmp/l'],
    ]);
    expect(plan?.template).not.toContain('/tmp/checkout/drivers');
  });

  it('leaves to bwrap what it cannot make', () => {
    const bindFd: FsOp = { op: 'bind-fd', fd: 5, path: '/work' };
    expect(nestPlan(N, [...system, bindFd], true)).toBeUndefined();
    // A workspace whose parent holds a mount of the template's (the cover would hide it).
    const hidden: FsOp[] = [
      { op: 'ro-bind', source: '/opt/pkg/lib', path: '/opt/pkg/lib' },
      { op: 'bind', source: '/opt/pkg/ws', path: '/opt/pkg/ws' },
    ];
    expect(nestPlan(N, [...system, ...hidden], true)).toBeUndefined();
    // Or at the root itself.
    expect(nestPlan(N, [...system, { op: 'bind', source: '/w', path: '/w' }], true)).toBeUndefined();
  });
});

async function run(server: TestServer, code: string, extra: Record<string, unknown> = {}) {
  const args = { language: 'python', code, ...extra };
  return (await callTool<ExecutionResult>(server.client, 'execute_code', args)).value;
}

const NESTED = 'import sys\nif open("/proc/1/comm").read() != "nest\\n": sys.exit(99)\n';

/** A run whose sandbox the nest made (the pool fills in the background). */
async function nestedRun(server: TestServer, code: string, extra: Record<string, unknown> = {}) {
  for (let i = 0; i < 50; i++) {
    const value = await run(server, NESTED + code, extra);
    if (value.exit_code !== 99) return value;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error('no run was made by the nest');
}

describe.skipIf(!root || SANDBOX_MODE === 'landlock')('the nest (root namespace server)', () => {
  let server: TestServer;
  let home: string;
  beforeAll(async () => {
    // A home outside /tmp, as ~/.codexec is: the workspaces' directory is then the template's,
    // and each run's mount point is made in a small tmpfs of its own over it (a "cover").
    home = mkdtempSync('/var/tmp/codexec-nest-test-');
    chmodSync(home, 0o711);
    server = await startServer({ home, env: { ...SANDBOX_ENV, CODEXEC_POOL_SIZE: '2' } });
  });
  afterAll(async () => {
    await server.close();
    rmSync(home, { recursive: true, force: true });
  });

  it('is built here (CI has a C compiler)', () => {
    expect(NEST).toBeDefined();
  });

  it('shares nothing writable: the root, /dev, the system and the workspace’s parent are read-only', async () => {
    const seen = await nestedRun(
      server,
      `import errno, os
out = []
for path in ("/planted", "/dev/planted", "/usr/planted", "/etc/planted", os.path.dirname(os.getcwd()) + "/planted"):
    try:
        open(path, "w").close()
        out.append("wrote " + path)
    except OSError as error:
        out.append(errno.errorcode[error.errno])
print(out)
print(sorted(os.listdir(os.path.dirname(os.getcwd()))) == [os.path.basename(os.getcwd())])`,
    );
    expect(seen.stdout).toBe("['EROFS', 'EROFS', 'EROFS', 'EROFS', 'EROFS']\nTrue\n");
  });

  it('gives each run its own /tmp, /dev/shm and /dev/pts, even while another run holds them', async () => {
    const holder = nestedRun(
      server,
      `import os, pty, time
open("/tmp/planted", "w").write("a")
open("/dev/shm/planted", "w").write("a")
master, slave = pty.openpty()
print(os.ttyname(slave), flush=True)
time.sleep(4)`,
    );
    // The second run starts while the first holds its files and its terminal.
    await new Promise((resolve) => setTimeout(resolve, 1500));
    const other = await nestedRun(
      server,
      'import os\nprint("planted" in os.listdir("/tmp"), os.listdir("/dev/shm"), sorted(os.listdir("/dev/pts")))',
    );
    // (/tmp may hold the mount points of a checkout under /tmp: bwrap makes those there too.)
    expect(other.stdout).toBe("False [] ['ptmx']\n");
    expect((await holder).stdout).toBe('/dev/pts/0\n');
  });

  it('reaps what a run orphans: its pid 1 leaves no zombie', async () => {
    const seen = await nestedRun(
      server,
      `import os, subprocess, time
# A child that starts a short-lived grandchild and exits at once: the grandchild is pid 1's.
subprocess.run(["sh", "-c", "(sleep 0.2; exit 0) & exit 0"])
time.sleep(1)
states = [open("/proc/%s/stat" % p).read().rsplit(")", 1)[1].split()[0] for p in os.listdir("/proc") if p.isdigit()]
print(states.count("Z"), len(states))`,
    );
    // pid 1 and this process are all that is left.
    expect(seen.stdout).toBe('0 2\n');
  });

  it("makes /dev's nodes of its own: root's, working, none the host's inode", async () => {
    const seen = await nestedRun(
      server,
      `import os, stat
out = []
for name in ("null", "zero", "full", "random", "urandom", "tty"):
    st = os.stat("/dev/" + name)
    out.append((name, stat.S_ISCHR(st.st_mode), oct(st.st_mode & 0o7777), st.st_uid, os.major(st.st_rdev), os.minor(st.st_rdev)))
print(out)
print(open("/dev/urandom", "rb").read(4) != b"\\0" * 4, open("/dev/null", "w").write("x"))
print([line.split()[4] for line in open("/proc/self/mountinfo") if line.split()[4].startswith("/dev/") and line.split()[4] not in ("/dev/pts", "/dev/shm")])
try:
    os.chmod("/dev/null", 0)
except OSError as error:
    print(error.strerror)`,
    );
    const host = statSync('/dev/null');
    expect(host.isCharacterDevice()).toBe(true);
    expect(seen.stdout).toBe(
      "[('null', True, '0o666', 0, 1, 3), ('zero', True, '0o666', 0, 1, 5), ('full', True, '0o666', 0, 1, 7), " +
        "('random', True, '0o666', 0, 1, 8), ('urandom', True, '0o666', 0, 1, 9), ('tty', True, '0o666', 0, 5, 0)]\n" +
        'True 1\n[]\nRead-only file system\n',
    );
  });

  it('keeps pid 1 without a capability, and the template out of sight', async () => {
    const seen = await nestedRun(
      server,
      `import os
status = dict(l.rstrip("\\n").split(":\\t", 1) for l in open("/proc/1/status") if ":\\t" in l)
print(status["Uid"].split()[0], status["CapEff"], status["CapPrm"], status["CapBnd"])
print(sorted(int(p) for p in os.listdir("/proc") if p.isdigit()) == [1, os.getpid()])`,
    );
    expect(seen.stdout).toBe('0 0000000000000000 0000000000000000 0000000000000000\nTrue\n');
  });
});

// Everything the sandbox decides about a bash run's process, as the run itself sees it.
const BASH_PROBE = `cd "$PWD"
echo "pid1=$(cat /proc/1/comm)"
grep -E '^(Uid|Gid|Groups|CapInh|CapPrm|CapEff|CapBnd|CapAmb|NoNewPrivs|Seccomp|SigBlk|SigIgn):' /proc/self/status
grep -v '^Max cpu time' /proc/self/limits
hostname; umask; echo "cwd=\${PWD/$HOME/HOME}"
env | cut -d= -f1 | sort | tr '\\n' ' '; echo
sed 1,2d /proc/net/dev | cut -d: -f1 | tr -d ' '
cut -d' ' -f5 /proc/self/mountinfo | grep -v -e "^$PWD$" -e '^/proc/sys$' -e '/drivers' -e '^/dev/[a-z]*$' | sort | tr '\\n' ' '; echo
trap -p; yes | head -1`;

describe.skipIf(!root || SANDBOX_MODE === 'landlock')(
  "bash runs exec'd by a zygote, in sandboxes the nest made",
  () => {
    let warm: TestServer;
    let cold: TestServer;
    beforeAll(async () => {
      warm = await startServer({ env: { ...SANDBOX_ENV, CODEXEC_POOL_SIZE: '2' } });
      cold = await startServer({ env: { ...SANDBOX_ENV, CODEXEC_POOL_SIZE: '0' } });
    });
    afterAll(async () => {
      await Promise.all([warm.close(), cold.close()]);
    });

    it('are confined exactly as a cold run under bwrap and the drop program', async () => {
      const bash = async (server: TestServer) =>
        (
          await callTool<ExecutionResult>(server.client, 'execute_code', {
            language: 'bash',
            code: BASH_PROBE,
          })
        ).value;
      let forked: ExecutionResult | undefined;
      for (let i = 0; i < 50 && !forked?.stdout.startsWith('pid1=nest\n'); i++) {
        forked = await bash(warm);
        if (!forked.stdout.startsWith('pid1=nest\n'))
          await new Promise((resolve) => setTimeout(resolve, 100));
      }
      const started = await bash(cold);
      expect(forked?.stdout.split('\n')[0]).toBe('pid1=nest');
      expect(started.stdout.split('\n')[0]).toBe('pid1=bwrap');
      expect(forked?.stderr).toBe('');
      const rest = (result: ExecutionResult | undefined) => result?.stdout.split('\n').slice(1);
      expect(rest(forked)).toEqual(rest(started));
      expect(rest(forked)).toContain('CapBnd:\t0000000000000000');
      // Nothing the helpers' Python ignores is left ignored (a shell could not undo it): SIGPIPE
      // ends \`yes\` quietly.
      expect(rest(forked)).toContain('SigIgn:\t0000000000000000');
      expect(started.stderr).toBe('');
    });
  },
);

describe.skipIf(!root || SANDBOX_MODE === 'landlock')('a template the nest cannot make', () => {
  let zygote: Zygote;
  let dir: string;
  beforeAll(() => {
    zygote = new Zygote('/usr/bin/python3', { PATH: '/usr/bin:/bin', PYTHONDONTWRITEBYTECODE: '1' }, 60_000);
    dir = mkdtempSync(join(tmpdir(), 'codexec-nest-test-'));
  });
  afterAll(() => {
    zygote.retire();
    rmSync(dir, { recursive: true, force: true });
  });
  const noCgroup = { dirs: [] } as unknown as RunCgroup;
  /** A python driver forked into the nest's sandbox from `template` (bwrap's fallback fails). */
  const fork = (template: string[]) =>
    zygote.fork(
      // A control channel: the warm driver waits on it for its job.
      { stdin: 'ignore', control: true },
      noCgroup,
      {
        bwrap: ['/bin/false'],
        placeholder: ['/bin/cat', '-'],
        nest: {
          template: [NEST as string, 'template', ...template],
          run: [NEST as string, 'run', 'proc', '/proc'],
        },
        uid: 65534,
        gid: 65534,
        env: {},
        cwd: '/',
      },
      Buffer.alloc(0),
      [],
    );

  it('leaves the sandbox to bwrap, and a new template is tried again', async () => {
    // No such source: the template is not made, and bwrap (/bin/false here) is started instead.
    await expect(fork(['ro-bind', join(dir, 'missing'), '/usr'])).rejects.toThrow(
      /the sandbox did not start \(bwrap: 1\)/,
    );
    // Another template is made, and the program's process forked into the nest's sandbox: a
    // root with /proc and /dev alone (the driver opens /dev/null, then waits for its job).
    const child = await fork(['dir', '/proc', 'dev', '/dev', 'dir', join(dir, 'made')]);
    const pid = child.pid as number;
    try {
      // (Once it has joined the sandbox's namespaces, which it does after its pid is reported.)
      await expect.poll(() => existsSync(`/proc/${pid}/root${dir}/made`)).toBe(true);
      expect(existsSync(`/proc/${pid}/root/usr`)).toBe(false);
    } finally {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {}
    }
  });

  it("ends a fork whose driver fails in the sandbox, never going back to the zygote's loop", async () => {
    // No /dev/null in this root: the driver's setup raises once it has emptied __main__, the
    // module whose names the zygote's own code uses.
    const child = await fork(['dir', '/proc', 'dir', join(dir, 'bare')]);
    let stderr = '';
    child.stderr?.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    const code = await new Promise((resolve) => child.on('exit', resolve));
    expect(stderr).toMatch(/codexec zygote: FileNotFoundError/);
    expect(stderr).not.toContain('NameError');
    expect(code).toBe(127);
  });
});
