// Sandbox mode docker through the real server, the real engine (podman here) and the real image,
// under each OCI runtime of RUNTIMES (the engine's default, and gVisor's runsc where installed).
// What a runtime does not offer is probed, and the test that needs it is skipped saying so.
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RETENTION_FIRST_MS } from '../../../src/pool/retention.js';
import { SWEEP_MIN_AGE_MS } from '../../../src/pool/sweep.js';
import { eventually } from '../../helpers/eventually.js';
import { warmReady } from '../../helpers/health.js';
import { callTool, startServer, type TestServer, tempDir } from '../../helpers/server.js';
import {
  containersOf,
  createdSince,
  ensureImage,
  ociContainersOf,
  ociRuntimeOf,
  RUNTIMES,
  runContainersOf,
  runtimeOf,
  sessionContainersOf,
} from './engine.js';

interface Run {
  success: boolean;
  stdout: string;
  stderr: string;
  exit_code: number | null;
  timed_out: boolean;
  sandbox_mode: string;
  warm: boolean;
  artifacts: string[];
  limit?: string;
  duration_ms: number;
}

/**
 * Whether a child of `pid` that ran an OCI runtime (`runc run`: a one-shot's container) has exited
 * and waits to be reaped: the runtime removed the container's cgroups before it exited.
 */
function endedRuntimeChild(pid: number): boolean {
  return readdirSync('/proc').some((name) => {
    if (!/^\d+$/.test(name)) return false;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      const comm = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
      const [state, parent] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      return Number(parent) === pid && state === 'Z' && /^run[cs]$/.test(comm);
    } catch {
      return false; // gone meanwhile
    }
  });
}

/** Milliseconds since `path` last changed (its ctime, as the sweep reads it); 0 once it is gone. */
function ageOf(path: string): number {
  try {
    return Date.now() - statSync(path).ctimeMs;
  } catch {
    return 0;
  }
}

const python = (server: TestServer, code: string, extra: Record<string, unknown> = {}) =>
  callTool<Run>(server.client, 'execute_code', { language: 'python', code, ...extra });

beforeAll(() => ensureImage(), 600_000);

describe.each(RUNTIMES)('runtime $name', ({ name, env: DOCKER, missing }) => {
  if (missing) console.warn(`docker-mode tests under runtime ${name} skipped: ${missing}`);
  describe.skipIf(missing)('sandbox mode docker', () => {
    let server: TestServer;
    beforeAll(async () => {
      server = await startServer({ env: DOCKER });
    });
    afterAll(async () => {
      const pid = server.pid;
      await server.close();
      expect(await eventually(() => containersOf(pid).length === 0)).toBe(true);
    });

    it("never hands the host's /dev/null to a container's user: one-shots, a session, its commands", async () => {
      // runsc (and crun before 1.24) chown a container's stdio to its user: given the host's
      // /dev/null as stdin, they made it the sandbox uid's, which every sandbox could then chmod.
      const owner = () => {
        const { uid, gid } = statSync('/dev/null');
        return [uid, gid];
      };
      const before = owner();
      for (let i = 0; i < 3; i++) expect((await python(server, 'print(1)')).value.stdout).toBe('1\n');
      const session = await callTool<{ session_id: string }>(server.client, 'start_session', {
        language: 'bash',
      });
      await callTool(server.client, 'send_to_session', {
        session_id: session.value.session_id,
        code: 'echo 1',
      });
      await callTool(server.client, 'close_session', { session_id: session.value.session_id });
      await callTool(server.client, 'execute_command', { command: 'echo 1' });
      // A command's timeout: its signals go by an exec in the command's container.
      await callTool(server.client, 'execute_command', { command: 'sleep 30', timeout_ms: 1000 });
      expect(owner()).toEqual(before);
    });

    it('runs python, node, typescript and bash, cold then warm, in containers', async () => {
      const code = {
        python: 'import os; print("py", os.getcwd())',
        node: 'console.log("js", process.cwd())',
        typescript: 'const n: number = 2; console.log("ts", n)',
        bash: 'echo "sh $PWD"',
      };
      const expected = {
        python: 'py /workspace\n',
        node: 'js /workspace\n',
        typescript: 'ts 2\n',
        bash: 'sh /workspace\n',
      };
      for (const [language, source] of Object.entries(code)) {
        const run = async () =>
          (await callTool<Run>(server.client, 'execute_code', { language, code: source })).value;
        const first = await run();
        // Once the pool holds a container of the language (it may still be starting), a run takes it.
        expect(await warmReady(server.client, language), `${language}: the pool fills`).toBe(true);
        const second = await run();
        for (const each of [first, second]) {
          expect(each, language).toMatchObject({ success: true, sandbox_mode: 'docker' });
          expect(each.stdout).toBe(expected[language as keyof typeof expected]);
        }
        expect(second.warm, `${language}: a warm container was used`).toBe(true);
      }
    });

    it('runs its containers under the runtime asked for (runc where none is)', async () => {
      const { value } = await callTool<{ session_id: string }>(server.client, 'start_session', {
        language: 'bash',
      });
      const [container = ''] = sessionContainersOf(server.pid);
      expect(runtimeOf(container.split(' ')[0] ?? '')).toBe(DOCKER.CODEXEC_DOCKER_RUNTIME ?? 'runc');
      await callTool(server.client, 'close_session', { session_id: value.session_id });
    });

    it('starts one-shot containers with the OCI runtime itself; the engine creates none', async () => {
      const before = new Date();
      const running = python(server, 'import time; time.sleep(2); print("done")');
      await expect.poll(() => ociContainersOf(server.pid).length, { timeout: 10_000 }).toBeGreaterThan(0);
      expect((await running).value).toMatchObject({ success: true, stdout: 'done\n' });
      expect((await python(server, 'print(2)')).value.stdout).toBe('2\n');
      expect(createdSince(server.pid, before)).toEqual([]);
      const [runtime = ''] = ociRuntimeOf(server.pid) ?? [];
      expect(basename(runtime)).toBe(DOCKER.CODEXEC_DOCKER_RUNTIME ?? 'runc');
    });

    it('reads no note the code put in its place (a fifo, a link to /dev/zero or to a host file)', async () => {
      // The wrapper's note names the limit that stopped a run the kernel killed (exit 137): the
      // server reads it on the host, where the code could leave anything at its name.
      const secret = join(tempDir(), 'note');
      writeFileSync(secret, 'processes', { mode: 0o600 });
      for (const plant of [
        'os.mkfifo(n)',
        'os.symlink("/dev/zero", n)',
        `os.symlink(${JSON.stringify(secret)}, n)`,
      ]) {
        const code = `import os\nn = "/workspace/.codexec-limit"\n${plant}\nos.kill(os.getpid(), 9)`;
        const { value } = await python(server, code, { timeout_ms: 20_000 });
        expect(value, plant).toMatchObject({ success: false, exit_code: 137, timed_out: false });
        expect(value.limit, plant).toBeUndefined();
        // The server still answers (it read nothing that never ends).
        expect((await python(server, 'print("still")')).value.stdout, plant).toBe('still\n');
      }
    }, 120_000);

    it('refuses code new namespaces and the kernel keyrings, in a one-shot and in a session', async () => {
      // podman's own profile allows both (docker's refuses them without CAP_SYS_ADMIN).
      const probe =
        'import ctypes, os\nlibc = ctypes.CDLL(None, use_errno=True)\n' +
        'def errno(result): return 0 if result != -1 else ctypes.get_errno()\n' +
        'keyctl = 250 if os.uname().machine == "x86_64" else 219\n' +
        'print("user", errno(libc.unshare(0x10000000)), "net", errno(libc.unshare(0x40000000)),' +
        ' "keyring", errno(libc.syscall(keyctl, 0, -4, 0)))';
      const { value: oneShot } = await python(server, probe);
      const { value: started } = await callTool<{ session_id: string }>(server.client, 'start_session', {
        language: 'python',
      });
      const { value: inSession } = await callTool<Run>(server.client, 'send_to_session', {
        session_id: started.session_id,
        code: probe,
      });
      await callTool(server.client, 'close_session', { session_id: started.session_id });
      for (const value of [oneShot, inSession]) {
        const [, user, , net, , keyring] = value.stdout.trim().split(' ').map(Number);
        expect(keyring, value.stdout).not.toBe(0);
        // gVisor runs no host seccomp profile for the code; its own kernel answers instead.
        if (name !== 'runsc') expect([user, net], value.stdout).toEqual([1, 1]);
      }
    });

    it('gives the code no network', async () => {
      const { value } = await python(
        server,
        'import os, socket\nprint(sorted(os.listdir("/sys/class/net")))\ns = socket.socket()\ns.settimeout(2)\n' +
          'try:\n    s.connect(("1.1.1.1", 53)); print("connected")\nexcept OSError as e:\n    print("refused", e.errno)',
      );
      expect(value.stdout).toMatch(/^\['lo'\]\nrefused \d+\n$/);
    });

    it('has a read-only root, a writable workspace and /tmp, and returns what the code wrote', async () => {
      const { value } = await python(
        server,
        'open("out.txt", "w").write("hi")\nopen("/tmp/t", "w").write("t")\n' +
          'try:\n    open("/usr/x", "w")\nexcept OSError as e:\n    print("usr", e.errno)\n' +
          'try:\n    open("/x", "w")\nexcept OSError as e:\n    print("root", e.errno)\n' +
          'for line in open("/proc/self/mountinfo"):\n    f = line.split()\n' +
          '    if f[4] in ("/", "/tmp", "/workspace"): print(f[4], f[5].split(",")[0])',
      );
      // EROFS, or (gVisor checks permissions first) EACCES for uid != 0; the mount table says why.
      expect(value.stdout).toMatch(/^usr (30|13)\nroot (30|13)\n/);
      expect(value.stdout.split('\n').slice(2).sort().join(' ')).toBe(' / ro /tmp rw /workspace rw');
      expect(value.artifacts).toEqual(['out.txt']);
    });

    it('sees no host files: not the server home, not root’s home, not the host /etc', async () => {
      const { value } = await python(
        server,
        `import os\nprint(os.path.exists(${JSON.stringify(server.home)}), os.path.exists("/etc/shadow"), ` +
          'len(os.listdir("/root")) if os.access("/root", os.R_OK) else 0, os.path.exists("/work"))',
      );
      expect(value.stdout).toBe('False False 0 False\n');
    });

    it('runs as a non-root user without capabilities or a way to gain them', async () => {
      // no_new_privs by prctl(PR_GET_NO_NEW_PRIVS): gVisor's /proc/self/status has no NoNewPrivs
      // line (nor CapAmb, a subset of CapPrm).
      const { value } = await python(
        server,
        'import os, ctypes\nprint(os.getuid(), os.getgid())\n' +
          'for line in open("/proc/self/status"):\n    if line.startswith("Cap"): print(line.split()[0], line.split()[1])\n' +
          'print("NoNewPrivs:", ctypes.CDLL(None).prctl(39, 0, 0, 0, 0))',
      );
      const lines = value.stdout.trim().split('\n');
      expect(lines[0]).not.toMatch(/^0 /);
      expect(lines.slice(1).filter((line) => !line.startsWith('CapAmb:'))).toEqual([
        'CapInh: 0000000000000000',
        'CapPrm: 0000000000000000',
        'CapEff: 0000000000000000',
        'CapBnd: 0000000000000000',
        'NoNewPrivs: 1',
      ]);
    });

    it('ends the whole container at the timeout', async () => {
      const started = Date.now();
      const { value } = await callTool<Run>(server.client, 'execute_code', {
        language: 'bash',
        code: 'sleep 60 & sleep 60; echo never',
        timeout_ms: 1500,
      });
      expect(value).toMatchObject({ success: false, timed_out: true });
      expect(value.stdout).not.toContain('never');
      expect(Date.now() - started).toBeLessThan(15_000);
      // Only pre-started (warm) containers of this server remain: none runs sleep.
      const { value: check } = await callTool<Run>(server.client, 'execute_code', {
        language: 'bash',
        code: 'echo ok',
      });
      expect(check.stdout).toBe('ok\n');
    });

    it('keeps a session’s state in one container and removes it on close', async () => {
      const { value: started } = await callTool<{ session_id: string; sandbox_mode: string }>(
        server.client,
        'start_session',
        { language: 'python' },
      );
      expect(started.sandbox_mode).toBe('docker');
      expect(sessionContainersOf(server.pid)).toHaveLength(1);
      const send = (code: string) =>
        callTool<Run & { session_alive: boolean }>(server.client, 'send_to_session', {
          session_id: started.session_id,
          code,
        });
      await send('x = 41\nprint("set", flush=True)');
      const { value } = await send('print("got", x + 1)\nx + 1');
      expect(value.stdout).toBe('got 42\n42\n');
      // Code reading stdin: the send says it waits for input. Under runc the host sees the read
      // itself; under gVisor, the sentry's wait on the stdin pipe it was handed, which it watches
      // only while a read of the program waits. A quiet sleep is no such wait.
      const quiet = await send('import time\ntime.sleep(1)');
      expect(quiet.value).toMatchObject({ success: true });
      expect(quiet.value).not.toHaveProperty('waiting_for_input');
      const asked = await callTool<Run & { waiting_for_input?: boolean; prompt?: string }>(
        server.client,
        'send_to_session',
        { session_id: started.session_id, code: 'y = input("Name? ")', timeout_ms: 10_000 },
      );
      expect(asked.value).toMatchObject({ waiting_for_input: true, prompt: 'Name? ' });
      const answered = await callTool<Run>(server.client, 'send_to_session', {
        session_id: started.session_id,
        input: 'Ada',
      });
      expect(answered.value).toMatchObject({ success: true });
      expect((await send('y')).value.stdout).toBe("'Ada'\n");
      await callTool(server.client, 'close_session', { session_id: started.session_id });
      expect(await eventually(() => sessionContainersOf(server.pid).length === 0)).toBe(true);
    });

    it('keeps the workspaces of a live session and of warm containers through the sweep of dead servers’ ones', async () => {
      // The sweep (at a run's take, and retention's first pass 5 s after start) removes workspaces
      // no live process names; a container's is named by its engine's `--volume <dir>:…` only.
      const serverStart = Date.now();
      const own = await startServer({ env: DOCKER });
      try {
        const { value: started } = await callTool<{ session_id: string }>(own.client, 'start_session', {
          language: 'python',
        });
        const send = (code: string) =>
          callTool<Run>(own.client, 'send_to_session', { session_id: started.session_id, code });
        expect((await send('open("keep.txt", "w").write("kept")')).value.success).toBe(true);
        const oneShot = () =>
          callTool<Run & { warm: boolean }>(own.client, 'execute_code', {
            language: 'bash',
            code: 'echo one',
          });
        expect((await oneShot()).value.stdout).toBe('one\n');
        // Until every workspace is past the sweep's minimum age (the youngest, a warm container's,
        // is made after the first run) and retention's first pass is due: the next take sweeps again.
        const sandbox = join(own.home, 'sandbox');
        const aged = () =>
          Date.now() - serverStart > RETENTION_FIRST_MS + 500 &&
          readdirSync(sandbox)
            .filter((name) => /^(exec|sess)_/.test(name))
            .every((name) => ageOf(join(sandbox, name)) > SWEEP_MIN_AGE_MS + 500);
        await expect.poll(aged, { timeout: 30_000, interval: 200 }).toBe(true);
        const warm = await oneShot();
        expect(warm.value).toMatchObject({ success: true, stdout: 'one\n', warm: true });
        // The sweep runs in the background and says nothing when it keeps everything: this pause
        // is the time it is given to do harm, which the checks below would see.
        await new Promise((resolve) => setTimeout(resolve, 500));
        expect((await oneShot()).value).toMatchObject({ success: true, stdout: 'one\n' });
        expect((await send('print(open("keep.txt").read())')).value.stdout).toBe('kept\n');
        expect(own.stderr()).not.toContain('left by a killed server');
      } finally {
        await own.close();
      }
    }, 90_000);
  });

  describe.skipIf(missing)('execute_command in sandbox mode docker', () => {
    it('runs every command of a connection in one persistent container, removed when the server goes', async () => {
      const server = await startServer({ env: DOCKER });
      const { pid } = server;
      const command = async (line: string, timeout?: number) =>
        (
          await callTool<Run & { work_dir: string }>(server.client, 'execute_command', {
            command: line,
            ...(timeout && { timeout }),
          })
        ).value;
      try {
        const first = await command('echo state > /tmp/kept; echo file > made.txt; pwd; id -u');
        expect(first).toMatchObject({ success: true, sandbox_mode: 'docker', artifacts: ['made.txt'] });
        expect(first.stdout).toMatch(/^\/workspace\n[1-9]\d*\n$/);
        const names = runContainersOf(pid);
        expect(names).toHaveLength(1);
        // /tmp is the container's own (not the host's, not a fresh one): the same container ran both.
        const second = await command('cat /tmp/kept made.txt');
        expect(second.stdout).toBe('state\nfile\n');
        const stopped = await command('sleep 60 & sleep 60', 2);
        expect(stopped).toMatchObject({ success: false, timed_out: true });
        expect((await command('echo after')).stdout).toBe('after\n');
        expect(runContainersOf(pid)).toEqual(names);
      } finally {
        await server.close();
      }
      expect(await eventually(() => containersOf(pid).length === 0)).toBe(true);
    });
  });

  describe.skipIf(missing)('sandbox mode docker limits', () => {
    describe.each(['cold', 'warm'])('a %s run past the container memory limit', (kind) => {
      let server: TestServer;
      /** Whether code sees its container's cgroup (gVisor shows none): the wrapper reads its counters there. */
      let seesCgroup = false;
      beforeAll(async () => {
        server = await startServer({
          env: { ...DOCKER, CODEXEC_DOCKER_MEMORY: '64m', CODEXEC_POOL_SIZE: kind === 'cold' ? '0' : '1' },
        });
        const { value } = await python(server, 'print(open("/proc/self/cgroup").read().strip() != "")');
        seesCgroup = value.stdout === 'True\n';
      });
      afterAll(() => server?.close());
      const overrun = async () => {
        if (kind === 'warm') expect(await warmReady(server.client, 'python')).toBe(true);
        const started = Date.now();
        const { value } = await python(server, 'b = bytearray(400 * 1024 * 1024)\nprint("survived")');
        expect(value).toMatchObject({ success: false, timed_out: false, warm: kind === 'warm' });
        expect(value.stdout).toBe('');
        // Not the timeout: the run ends with its container.
        expect(Date.now() - started).toBeLessThan(10_000);
        return value;
      };

      it('is killed', async () => {
        expect((await overrun()).exit_code).not.toBe(0);
        // podman's conmon marks an OOM kill with a file `oom` in the directory it inherits: the
        // server starts engines in a private one, never its own (an operator's project folder).
        expect(existsSync(join(server.home, 'oom'))).toBe(false);
      });

      it('is reported as limit "memory"', async ({ skip }) => {
        skip(
          !seesCgroup,
          'code sees no cgroup of its container (/proc/self/cgroup is empty): no OOM counter to read',
        );
        expect(await overrun()).toMatchObject({ limit: 'memory' });
      });

      it('ends a session as limit "memory", said so, its note no artifact', async ({ skip }) => {
        skip(kind === 'warm' || !seesCgroup, 'one session test is enough; it needs the OOM counter');
        const started = await callTool<{ session_id: string }>(server.client, 'start_session', {
          language: 'python',
        });
        const { value } = await callTool<Record<string, unknown>>(server.client, 'send_to_session', {
          session_id: started.value.session_id,
          code: 'b = bytearray(400 * 1024 * 1024)\nprint("survived")',
        });
        expect(value).toMatchObject({
          success: false,
          session_alive: false,
          limit: 'memory',
          artifacts_deleted: [],
        });
        expect(value.error).toMatch(
          /^memory limit reached \(CODEXEC_DOCKER_MEMORY=64m\), so the session was killed/,
        );
        expect(value.stderr).toContain(
          '[codexec: memory limit reached (CODEXEC_DOCKER_MEMORY=64m); process killed]',
        );
      });
    });

    describe('a fork bomb', () => {
      let server: TestServer;
      /** No warm pool: every run in a container started for it, killed whole at its timeout. */
      let cold: TestServer;
      /** Whether a run starts at all under a pids limit of 64 (gVisor's own host threads count too). */
      let starts = false;
      let seesCgroup = false;
      beforeAll(async () => {
        const env = { ...DOCKER, CODEXEC_MAX_PROCS: '64' };
        [server, cold] = await Promise.all([
          startServer({ env }),
          startServer({ env: { ...env, CODEXEC_POOL_SIZE: '0' } }),
        ]);
        const { value } = await python(server, 'print(open("/proc/self/cgroup").read().strip() != "")');
        starts = value.success;
        seesCgroup = value.stdout === 'True\n';
      });
      afterAll(() => Promise.all([server?.close(), cold?.close()]));
      const unsupported =
        'print(1) does not run under a pids limit of 64 (the runtime’s own host threads count against it)';
      /**
       * `then` runs after the bomb. An endless loop deaf to SIGTERM ends the run at its timeout's
       * SIGKILL of the whole container, before its wrapper could note the limit: still named.
       */
      const bomb = async (on: TestServer, then = 'sleep 2; echo after', before = '') => {
        const { value } = await callTool<Run>(on.client, 'execute_code', {
          language: 'bash',
          code: `${before}bomb() { bomb | bomb & }; bomb; ${then}`,
          timeout_ms: 10_000, // room for the bomb to reach the limit on a loaded machine
        });
        return value;
      };
      const noCounter =
        'code sees no cgroup of its container (/proc/self/cgroup is empty): no pids counter to read';

      it('is stopped at the pids limit, reported as limit "processes"; the server keeps answering', async ({
        skip,
      }) => {
        skip(!starts, unsupported);
        skip(!seesCgroup, noCounter);
        expect(await bomb(server)).toMatchObject({ limit: 'processes' });
        expect((await python(server, 'print(6 * 7)')).value.stdout).toBe('42\n');
      });

      it('is still named when the container is gone before the server reads its driver’s report', async ({
        skip,
      }) => {
        skip(!starts, unsupported);
        skip(!seesCgroup, noCounter);
        // Once the bomb is refused (no forks: builtins only), the script marks `ready` and waits for
        // `go`. The server is stopped meanwhile: the driver's report waits in its socket while the
        // container ends and the runtime removes its cgroups, so the counters are gone when the
        // server reads the report or the runtime's exit, whichever it reads first (as a loaded
        // server may). The report read first is limits.test.ts's.
        const refused =
          'hit() { local f k v; for f in /sys/fs/cgroup/pids/pids.events /sys/fs/cgroup/pids.events; do [ -r $f ] && read -r k v < $f && [ "$v" != 0 ] && return 0; done; return 1; }; ' +
          'until hit; do :; done; : > ready; until [ -e go ]; do :; done';
        const call = bomb(server, refused);
        const sandbox = join(server.home, 'sandbox');
        const workspace = () => readdirSync(sandbox).find((name) => existsSync(join(sandbox, name, 'ready')));
        expect(await eventually(() => workspace() !== undefined)).toBe(true);
        process.kill(server.pid, 'SIGSTOP');
        try {
          writeFileSync(join(sandbox, workspace() ?? '', 'go'), '');
          expect(await eventually(() => endedRuntimeChild(server.pid))).toBe(true);
        } finally {
          process.kill(server.pid, 'SIGCONT');
        }
        expect(await call).toMatchObject({ limit: 'processes' });
      });

      it('in a cold container killed whole at its timeout, is still reported as limit "processes"', async ({
        skip,
      }) => {
        skip(!starts, unsupported);
        skip(!seesCgroup, noCounter);
        expect(await bomb(cold, 'while :; do :; done', "trap '' TERM INT HUP; ")).toMatchObject({
          warm: false,
          timed_out: true,
          limit: 'processes',
        });
        expect((await python(cold, 'print(6 * 7)')).value.stdout).toBe('42\n');
      });
    });

    it('refuses clearly when the image is missing, naming codexec image build', async () => {
      const server = await startServer({
        env: { ...DOCKER, CODEXEC_DOCKER_IMAGE: 'codexec-no-such-image-here' },
      });
      try {
        const { isError, value } = await python(server, 'print(1)');
        expect(isError).toBe(true);
        expect(value).toMatchObject({ code: 'SANDBOX_UNAVAILABLE' });
        expect(String((value as unknown as { error: string }).error)).toContain('codexec image build');
      } finally {
        await server.close();
      }
    });
  });
});
