// Sandbox mode landlock, below the server: the confine launcher (a hand-assembled executable that
// runs a script of system calls the server builds), the Landlock rules per run, the zygote's forked
// Python confining itself, and what a root server lends its sandbox user (search, by an ACL).
// The hostile suite (test/hostile) runs the same attacks through the server in this mode.
import { spawnSync } from 'node:child_process';
import {
  chmodSync,
  closeSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SandboxSpec } from '../../src/sandbox/index.js';
import { confineProgram, MAX_RECORDS } from '../../src/sandbox/landlock/confine.js';
import { Confiner, LandlockBackend, landlockAbi } from '../../src/sandbox/landlock/index.js';
import { Reach } from '../../src/sandbox/landlock/reach.js';
import { handledFs } from '../../src/sandbox/landlock/rules.js';
import { Script } from '../../src/sandbox/landlock/script.js';
import { ANY_RUN, isRunUid, RUN_GID } from '../../src/sandbox/landlock/uids.js';
import { output as printed } from '../helpers/sandboxed.js';

const root = process.getuid?.() === 0;
const PYTHON = '/usr/bin/python3';

/** Run the launcher with `script` on fd 4 (from a file: spawnSync has no input for other fds). */
function launch(script: Buffer, argv: string[], env: Record<string, string> = {}) {
  const dir = mkdtempSync(join(tmpdir(), 'codexec-confine-test-'));
  const file = join(dir, 'script');
  writeFileSync(file, script);
  const fd = openSync(file, 'r');
  try {
    const result = spawnSync(new Confiner().program(), argv, {
      stdio: ['ignore', 'pipe', 'pipe', 'ignore', fd],
      env,
      encoding: 'utf8',
    });
    return { status: result.status, stdout: result.stdout, stderr: result.stderr };
  } finally {
    closeSync(fd);
    rmSync(dir, { recursive: true, force: true });
  }
}

const EXIT_GROUP = 231;
const WRITE = 1;

describe('the confine launcher', () => {
  it('is a small static executable', () => {
    const program = confineProgram();
    expect(program?.subarray(0, 4).toString('latin1')).toBe('\x7fELF');
    expect(program?.length).toBeLessThan(1200);
    expect(confineProgram('arm64')).toBeUndefined();
  });

  it('makes the calls of its script in order, then execs its arguments with its environment', () => {
    const script = new Script();
    const text = script.data(Buffer.from('from the script\n'));
    script.call(WRITE, [1, { at: text }, 16]);
    const out = launch(script.encode(), ['/bin/sh', '-c', 'echo "$0 $1 $X"; ls /proc/self/fd', 'a', 'b'], {
      X: 'x',
    });
    expect(out.status).toBe(0);
    // fd 4 (the script) is closed before the program runs.
    const [said, args, ...fds] = out.stdout.trim().split('\n');
    expect([said, args]).toEqual(['from the script', 'a b x']);
    expect(fds).toContain('0');
    expect(fds).not.toContain('4');
  });

  it('stores results and loads them into later calls', () => {
    const script = new Script();
    const slot = script.slot();
    // getpid() into the slot, then exit_group(that pid & 0xff).
    script.call(39, [], { store: slot });
    script.call(EXIT_GROUP, [{ load: slot }]);
    const confiner = new Confiner();
    const status = confiner.runScript(script.encode());
    expect(status).toBeGreaterThanOrEqual(0);
    expect(status).toBeLessThan(256);
  });

  it('writes a pointer into its data (STORE) and names a failing step with its errno', () => {
    const script = new Script();
    const path = script.string('/nonexistent/codexec');
    const pointer = script.slot();
    script.set(pointer, { at: path });
    // open(*pointer, O_RDONLY): the path through the stored pointer, ENOENT.
    script.call(2, [{ load: pointer }, 0]);
    const out = launch(script.encode(), ['/bin/true']);
    expect(out.status).toBe(126);
    expect(out.stderr).toBe('codexec: could not confine the program: step 1 failed with errno 2\n');
  });

  it('lets a call marked so fail, and reports a program it cannot run (127)', () => {
    const script = new Script();
    script.call(2, [{ at: script.string('/nonexistent') }, 0], { mayFail: true });
    const out = launch(script.encode(), ['/nonexistent/program']);
    expect(out.status).toBe(127);
    expect(out.stderr).toBe('codexec: could not run the program: errno 2\n');
  });

  it('refuses a malformed script or no program', () => {
    const usage = 'usage: codexec-confine PROGRAM [ARG]... (its script on fd 4)\n';
    expect(launch(Buffer.alloc(4), ['/bin/true'])).toMatchObject({ status: 126, stderr: usage });
    // Says one record, has none.
    const lying = Buffer.alloc(8);
    lying.writeBigUInt64LE(1n);
    expect(launch(lying, ['/bin/true'])).toMatchObject({ status: 126, stderr: usage });
    expect(launch(new Script().encode(), [])).toMatchObject({ status: 126, stderr: usage });
  });

  it('bounds a script to what the launcher holds', () => {
    const script = new Script();
    for (let i = 0; i <= MAX_RECORDS; i++) script.call(39, []);
    expect(() => script.encode()).toThrow(/at most 900 calls/);
    const big = new Script();
    big.data(70_000);
    expect(() => big.encode()).toThrow(/at most 65536 bytes/);
  });
});

describe('Landlock on this kernel', () => {
  it('reports the kernel ABI through the launcher', () => {
    // This machine's kernel has Landlock (doctor shows it); CI runs on the same kind.
    expect(landlockAbi()).toBeGreaterThanOrEqual(1);
  });

  it('handles the filesystem rights each ABI adds', () => {
    expect(handledFs(1)).toBe((1n << 13n) - 1n);
    expect(handledFs(2) & (1n << 13n)).toBe(1n << 13n); // REFER
    expect(handledFs(3) & (1n << 14n)).toBe(1n << 14n); // TRUNCATE
    expect(handledFs(4)).toBe(handledFs(3));
    expect(handledFs(5) & (1n << 15n)).toBe(1n << 15n); // IOCTL_DEV
  });
});

describe('landlock runs', () => {
  const backend = new LandlockBackend();
  let base: string;
  let workspace: string;
  let outside: string;
  beforeAll(async () => {
    // Runs start after the probe, as a server's do (a root server's claims its runs' uids).
    await backend.probe();
    base = mkdtempSync(join(tmpdir(), 'codexec-landlock-'));
    chmodSync(base, 0o755);
    workspace = join(base, 'workspace');
    outside = join(base, 'outside');
    mkdirSync(workspace, { mode: 0o755 });
    mkdirSync(outside, { mode: 0o755 });
    // World-readable: only Landlock keeps the code from it.
    writeFileSync(join(outside, 'secret'), 'host secret\n', { mode: 0o644 });
  });

  afterAll(() => rmSync(base, { recursive: true, force: true }));

  function spec(code: string, extra: Partial<SandboxSpec> = {}): SandboxSpec {
    return {
      argv: [PYTHON, '-c', code],
      cwd: workspace,
      env: { PATH: '/usr/bin:/bin', HOME: workspace },
      writablePaths: [workspace],
      readablePaths: [],
      limits: { memoryMb: 256, maxProcs: 32, maxFileMb: 16 },
      network: 'none',
      stdin: 'ignore',
      ...extra,
    };
  }

  /** What the process printed, stdout then stderr. */
  async function output(proc: ReturnType<LandlockBackend['spawn']>) {
    const { exit, stdout, stderr } = await printed(proc);
    return { exit, out: stdout + stderr };
  }

  const PROBE = `
import json, os, socket, tempfile
def attempt(fn):
    try:
        fn()
        return 'ok'
    except OSError as e:
        return e.strerror
def write(path):
    with open(path, 'w') as f:
        f.write('x')
out = {
    'uid': os.getuid(),
    'read_outside': attempt(lambda: open(${JSON.stringify('OUTSIDE')} + '/secret').read()),
    'list_outside': attempt(lambda: os.listdir(${JSON.stringify('OUTSIDE')})),
    'write_outside': attempt(lambda: write(${JSON.stringify('OUTSIDE')} + '/planted')),
    'write_workspace': attempt(lambda: write('mine')),
    'write_tmpdir': attempt(lambda: write(os.path.join(tempfile.gettempdir(), 'mine'))),
    'write_tmp': attempt(lambda: write('/tmp/codexec-landlock-planted')),
    'inet': attempt(lambda: socket.socket(socket.AF_INET, socket.SOCK_STREAM)),
    'cwd': os.getcwd(),
}
print(json.dumps(out))
`;

  const probe = () => PROBE.replaceAll('"OUTSIDE"', JSON.stringify(outside));

  it('confines a cold run: its workspace and TMPDIR writable, nothing else', async () => {
    expect(await backend.probe()).toEqual({ available: true });
    const { exit, out } = await output(backend.spawn(spec(probe())));
    expect(exit.code).toBe(0);
    const seen = JSON.parse(out);
    // A root server's run: a uid of its own, which no other run (nor nobody) has.
    if (root) expect(isRunUid(seen.uid)).toBe(true);
    expect(seen).toEqual({
      uid: root ? seen.uid : process.getuid?.(),
      read_outside: 'Permission denied',
      list_outside: 'Permission denied',
      write_outside: 'Permission denied',
      write_workspace: 'ok',
      write_tmpdir: 'ok',
      write_tmp: 'Permission denied',
      inet: 'Permission denied',
      cwd: workspace,
    });
    expect(readFileSync(join(outside, 'secret'), 'utf8')).toBe('host secret\n');
  });

  it('removes the run’s own temporary directory with it', async () => {
    const { out } = await output(backend.spawn(spec('import tempfile; print(tempfile.gettempdir())')));
    const dir = out.trim();
    // In the workspace, where the disk bounds count it.
    expect(dir.startsWith(join(workspace, '.codexec-tmp-'))).toBe(true);
    expect(() => statSync(dir)).toThrow();
  });

  it('gives the program exactly the run’s environment (on the script’s pipe, not in an argv)', async () => {
    const env = { PATH: '/usr/bin:/bin', HOME: workspace, SECRET: 'value-ps-must-not-show' };
    const proc = backend.spawn(
      spec(
        'import os, sys, time; print(sorted(k for k in os.environ if k != "LC_CTYPE")); sys.stdout.flush(); time.sleep(5)',
        { env },
      ),
    );
    let said = '';
    await new Promise<void>((resolve) =>
      proc.stdout.on('data', (chunk: Buffer) => {
        said += chunk.toString();
        if (said.includes('\n')) resolve();
      }),
    );
    // (Python adds LC_CTYPE itself under the C locale, PEP 538.) The process shows the program's argv and nothing else.
    const cmdline = readFileSync(`/proc/${proc.pid}/cmdline`, 'utf8').split('\0').slice(0, -1);
    proc.kill('SIGKILL');
    await output(proc);
    expect(said).toBe(
      `${JSON.stringify(['HOME', 'PATH', 'SECRET', 'TMPDIR']).replaceAll('"', "'").replaceAll(',', ', ')}\n`,
    );
    expect(cmdline[0]).toBe(PYTHON);
    expect(cmdline.join(' ')).not.toContain('value-ps-must-not-show');
  });

  it.runIf(root)('confines a Python the zygote forked as a cold run is confined', async () => {
    expect(backend.forksDrivers()).toBe(true);
    const warm = spec('', {
      argv: [PYTHON, join(process.cwd(), 'drivers', 'warm_python.py')],
      control: true,
      stdin: 'pipe',
      zygote: 'only',
    });
    await backend.reserveFork(warm, 5000);
    const proc = backend.spawn(warm);
    // The forked process confines itself, then waits on its control channel before any code runs.
    let status = '';
    for (let waited = 0; waited < 5000 && !/^Seccomp:\s+2$/m.test(status); waited += 20) {
      await new Promise((resolve) => setTimeout(resolve, 20));
      status = readFileSync(`/proc/${proc.pid}/status`, 'utf8');
    }
    const cmdline = readFileSync(`/proc/${proc.pid}/cmdline`, 'utf8');
    expect(cmdline).toContain('zygote.py');
    const uid = Number(/^Uid:\s+(\d+)\s/m.exec(status)?.[1]);
    expect(isRunUid(uid)).toBe(true);
    expect(status).toMatch(/^NoNewPrivs:\s+1$/m);
    expect(status).toMatch(/^Seccomp:\s+2$/m);
    expect(status).toMatch(/^CapBnd:\s+0{16}$/m);
    proc.kill('SIGKILL');
    await proc.exited;
    await proc.dispose();
  });
});

describe.runIf(root)('what a root server lends its sandbox user', () => {
  let base: string;

  beforeAll(() => {
    base = mkdtempSync(join(tmpdir(), 'codexec-reach-'));
    chmodSync(base, 0o755);
  });

  afterAll(() => rmSync(base, { recursive: true, force: true }));

  const run = ANY_RUN;
  const confiner = new Confiner();

  it('search on a directory of codexec’s own, by an ACL entry for the runs’ group alone', () => {
    const home = join(base, 'home');
    mkdirSync(join(home, 'sandbox', 'run'), { recursive: true, mode: 0o700 });
    chmodSync(home, 0o700);
    const reach = new Reach([home], (script) => confiner.runScript(script));
    expect(reach.check(join(home, 'sandbox', 'run', 'main.py'), run)).toBeUndefined();
    // Others still may not search it (mode 0710 + ACL: the group bits are the ACL's mask).
    expect(statSync(home).mode & 0o007).toBe(0);
    const as = (uid: number, gid: number, path: string) =>
      spawnSync(
        '/usr/bin/setpriv',
        [`--reuid=${uid}`, `--regid=${gid}`, '--clear-groups', '/usr/bin/stat', path],
        {
          encoding: 'utf8',
        },
      ).status;
    // Any run's uid, in the runs' group; not nobody, whose group (nogroup) daemons run as.
    expect(as(run.uid + 7, RUN_GID, join(home, 'sandbox', 'run'))).toBe(0);
    expect(as(65534, 65534, join(home, 'sandbox', 'run'))).not.toBe(0);
    const as1000 = spawnSync(
      '/usr/bin/setpriv',
      ['--reuid=1000', '--regid=1000', '--clear-groups', '/usr/bin/stat', join(home, 'sandbox')],
      { encoding: 'utf8' },
    ).status;
    expect(as1000).not.toBe(0);
  });

  it('refuses a path behind a directory that is not codexec’s, naming it and the fix', () => {
    const theirs = join(base, 'theirs');
    mkdirSync(join(theirs, 'codexec'), { recursive: true });
    chmodSync(theirs, 0o700);
    const reach = new Reach([join(theirs, 'codexec')], (script) => confiner.runScript(script));
    const why = reach.check(join(theirs, 'codexec', 'sandbox'), run);
    expect(why).toContain(`${theirs} does not let them search and is not codexec's to open`);
    expect(why).toContain('CODEXEC_HOME');
    expect(statSync(theirs).mode & 0o777).toBe(0o700);
  });
});
