// Sandbox mode auto where namespaces are denied, through the real server over stdio:
// a non-root server whose user namespace limit is 0 runs code confined by Landlock, and a server
// under a seccomp filter that denies namespaces on a "kernel" without Landlock runs none. Each
// denial reaches only the server under test (fixtures/sandbox/*.py), never the machine: test files
// run in parallel, and a machine-wide sysctl would break the others.
import { spawnSync } from 'node:child_process';
import { chmodSync, chownSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { baseEnv, CLI, callTool, startServer, type TestServer, tempDir } from '../helpers/server.js';

const FIXTURES = resolve(import.meta.dirname, '../fixtures/sandbox');
const PYTHON = '/usr/bin/python3';
/** As uid 65534 in a user namespace of its own whose max_user_namespaces is 0. */
const NO_USERNS = [PYTHON, join(FIXTURES, 'no-userns.py')];
/** Under a seccomp filter denying new namespaces and Landlock's syscalls (ENOSYS: no Landlock). */
const NO_NAMESPACES_NO_LANDLOCK = [PYTHON, join(FIXTURES, 'seccomp-deny.py'), '--no-landlock'];
const root = process.getuid?.() === 0;

interface Run {
  success: boolean;
  stdout: string;
  stderr: string;
  sandbox_mode: string;
  error?: string;
  code?: string;
}

/** A CODEXEC_HOME (and HOME) the server's user owns. */
function homeFor(uid: number): string {
  const home = tempDir('codexec-auto-');
  chownSync(home, uid, uid);
  return home;
}

function doctor(wrapper: readonly string[], home: string): { status: number | null; stdout: string } {
  const [command = PYTHON, ...args] = [...wrapper, process.execPath, CLI, 'doctor'];
  const env = { ...baseEnv(join(home, 'state')), HOME: home, CODEXEC_SANDBOX_MODE: 'auto' };
  const result = spawnSync(command, args, { env, encoding: 'utf8', timeout: 60_000 });
  return { status: result.status, stdout: result.stdout };
}

describe.runIf(root)('auto, a non-root server denied user namespaces (max_user_namespaces=0)', () => {
  let home: string;
  let server: TestServer;
  let canaries: string[];

  beforeAll(async () => {
    home = homeFor(65534);
    // Files the server's user may read (DAC allows them) outside anything a landlock run may read:
    // in a world-readable directory of the host's /tmp, and in the server's own home.
    const outside = tempDir('codexec-auto-canary-');
    chmodSync(outside, 0o755);
    canaries = [join(outside, 'canary.txt'), join(home, 'canary.txt')];
    for (const canary of canaries) writeFileSync(canary, 'host file\n', { mode: 0o644 });
    server = await startServer({
      home,
      wrapper: NO_USERNS,
      env: { HOME: home, CODEXEC_SANDBOX_MODE: 'auto' },
    });
  });

  afterAll(async () => {
    await server?.close();
    rmSync(home, { recursive: true, force: true });
    if (canaries?.[0]) rmSync(join(canaries[0], '..'), { recursive: true, force: true });
  });

  it("control: outside a sandbox the server's user reads both files", () => {
    const cat = spawnSync('setpriv', [
      '--reuid=65534',
      '--regid=65534',
      '--clear-groups',
      'cat',
      ...canaries,
    ]);
    expect(cat.stdout.toString()).toBe('host file\nhost file\n');
  });

  it('runs code confined by landlock, and says so', async () => {
    const code = [
      'import os',
      'print(os.getuid())',
      `for path in ${JSON.stringify(canaries)}:`,
      '    try:',
      '        open(path).read()',
      "        print('read', path)",
      '    except OSError as e:',
      "        print('denied', e.errno)",
    ].join('\n');
    const { isError, value } = await callTool<Run>(server.client, 'execute_code', {
      language: 'python',
      code,
    });
    expect({ isError, error: value.error }).toEqual({ isError: false, error: undefined });
    // 13: EACCES, Landlock's answer (the files are readable to the server's user).
    expect(value).toMatchObject({
      success: true,
      sandbox_mode: 'landlock',
      stdout: '65534\ndenied 13\ndenied 13\n',
    });
    expect(server.stderr()).toContain('sandbox mode "auto" uses landlock');
    expect(server.stderr()).toContain('user.max_user_namespaces=0');
  });

  it('doctor names the cause and its fix, and that auto picks landlock', () => {
    const { status, stdout } = doctor(NO_USERNS, home);
    expect(status).toBe(0);
    expect(stdout).toMatch(
      /^ {2}missing +namespaces +unshare --user --map-root-user --mount true fails: .*No space left/m,
    );
    expect(stdout).toMatch(
      /^ {2}cause +max_user_namespaces +user namespaces are switched off: user\.max_user_namespaces=0/m,
    );
    expect(stdout).toMatch(/^ {2}fix +sysctl -w user\.max_user_namespaces=15000/m);
    expect(stdout).toMatch(/^ {2}auto will pick: +landlock \(namespaces fail here/m);
  });
});

describe.runIf(root)('auto, namespaces denied by seccomp and no Landlock: no code runs on Linux', () => {
  let home: string;

  beforeAll(() => {
    home = homeFor(0);
  });
  afterAll(() => rmSync(home, { recursive: true, force: true }));

  it('refuses every run with SANDBOX_UNAVAILABLE naming the cause, the fix and the opt-out', async () => {
    const server = await startServer({
      home: join(home, 'auto'),
      wrapper: NO_NAMESPACES_NO_LANDLOCK,
      env: { CODEXEC_SANDBOX_MODE: 'auto' },
    });
    try {
      for (const language of ['python', 'bash']) {
        const { isError, value } = await callTool<Run>(server.client, 'execute_code', {
          language,
          code: 'echo ran > /dev/null',
        });
        expect(isError).toBe(true);
        expect(value.code).toBe('SANDBOX_UNAVAILABLE');
        expect(value.error).toMatch(
          /^sandbox mode "auto" will not run code here: the namespace sandbox cannot start/,
        );
        expect(value.error).toContain('this kernel offers no Landlock (ABI 0)');
        expect(value.error).toContain('Cause: the server runs under a seccomp filter (Seccomp: 2');
        expect(value.error).toContain('Fix: start the server without that filter');
        expect(value.error).toContain('set CODEXEC_SANDBOX_MODE=subprocess explicitly');
      }
      const command = await callTool<Run>(server.client, 'execute_command', { command: 'true' });
      expect(command.value.code).toBe('SANDBOX_UNAVAILABLE');
    } finally {
      await server.close();
    }
  });

  it('CODEXEC_SANDBOX_MODE=subprocess is the explicit opt-out: code runs, unconfined', async () => {
    const server = await startServer({
      home: join(home, 'subprocess'),
      wrapper: NO_NAMESPACES_NO_LANDLOCK,
      env: { CODEXEC_SANDBOX_MODE: 'subprocess' },
    });
    try {
      const { value } = await callTool<Run>(server.client, 'execute_code', {
        language: 'bash',
        code: 'echo ran',
      });
      expect(value).toMatchObject({ success: true, stdout: 'ran\n', sandbox_mode: 'subprocess' });
    } finally {
      await server.close();
    }
  });

  it('doctor names the seccomp filter and its fix, and that auto will run nothing', () => {
    const { status, stdout } = doctor(NO_NAMESPACES_NO_LANDLOCK, home);
    expect(status).toBe(0);
    expect(stdout).toMatch(
      /^ {2}missing +namespaces +unshare --mount --net true fails: .*Operation not permitted/m,
    );
    expect(stdout).toMatch(/^ {2}cause +seccomp +the server runs under a seccomp filter \(Seccomp: 2/m);
    expect(stdout).toMatch(/^ {2}fix +start the server without that filter/m);
    expect(stdout).toMatch(/^ {2}missing +Landlock ABI +0: /m);
    expect(stdout).toMatch(/^ {2}auto will pick: +nothing: it refuses to run code/m);
  });
});
