// Sandbox mode docker on the docker engine itself: a dockerd (Debian's docker.io) started here on
// its own socket and data root, stopped by its pid; the image built into it from the host. The
// rest of the docker-mode suite runs on podman; this proves the docker CLI's path end to end.
// The whole suite runs on docker too: CODEXEC_CONTAINER_ENGINE=docker DOCKER_HOST=unix://… npx vitest run test/sandbox/container test/hostile
// The daemon knows gVisor's runsc where it is installed, with the flags sandbox mode docker needs.
import { type ChildProcess, execFileSync, spawn, spawnSync } from 'node:child_process';
import { rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from '../../helpers/eventually.js';
import { warmReady } from '../../helpers/health.js';
import { CLI, callTool, startServer, type TestServer, tempDir } from '../../helpers/server.js';

const IMAGE = 'codexec-sandbox-dockerd-test';
const RUNSC = spawnSync('sh', ['-c', 'command -v runsc'], { encoding: 'utf8' }).stdout.trim();
/**
 * runsc as docker mode needs it: a driver opens the control socket in its workspace (host-uds);
 * and Debian 12's runsc (2022) refuses, with docker as with podman, to copy a container's network
 * namespace ("cannot run with network enabled in root network namespace"): gVisor's own empty
 * network instead.
 */
const DAEMON_JSON = {
  runtimes: { runsc: { path: RUNSC, runtimeArgs: ['--host-uds=open', '--network=none'] } },
};

describe('sandbox mode docker on a docker daemon', () => {
  const dir = tempDir('codexec-dockerd-');
  const host = `unix://${join(dir, 'docker.sock')}`;
  let daemon: ChildProcess;
  let server: TestServer;
  const docker = (...args: string[]) =>
    execFileSync('docker', args, { encoding: 'utf8', env: { ...process.env, DOCKER_HOST: host } });
  const containersOf = (pid: number) =>
    docker('ps', '--all', '--filter', `label=codexec.pid=${pid}`, '--format', '{{.Names}}')
      .split('\n')
      .filter(Boolean);
  const env = {
    CODEXEC_SANDBOX_MODE: 'docker',
    CODEXEC_CONTAINER_ENGINE: 'docker',
    CODEXEC_DOCKER_IMAGE: IMAGE,
    DOCKER_HOST: host,
  };

  beforeAll(async () => {
    writeFileSync(join(dir, 'daemon.json'), JSON.stringify(RUNSC ? DAEMON_JSON : {}));
    daemon = spawn(
      'dockerd',
      [
        '--config-file',
        join(dir, 'daemon.json'),
        '--data-root',
        join(dir, 'data'),
        '--exec-root',
        join(dir, 'exec'),
        '--pidfile',
        join(dir, 'pid'),
        '-H',
        host,
        '--iptables=false',
        '--bridge=none',
      ],
      { stdio: 'ignore' },
    );
    expect(
      await eventually(() => {
        try {
          return docker('version', '--format', '{{.Server.Version}}').trim() !== '';
        } catch {
          return false;
        }
      }, 60_000),
    ).toBe(true);
    execFileSync(
      process.execPath,
      [CLI, 'image', 'build', '--from-host', '--engine', 'docker', '--tag', IMAGE],
      {
        env: { ...process.env, DOCKER_HOST: host },
        stdio: 'inherit',
      },
    );
    server = await startServer({ env });
  }, 300_000);

  afterAll(async () => {
    await server?.close();
    if (daemon?.pid) {
      daemon.kill('SIGTERM');
      await new Promise((resolve) => daemon.once('exit', resolve));
    }
    rmSync(dir, { recursive: true, force: true });
  }, 60_000);

  it('runs every language in containers, warm ones too, confined', async () => {
    const code = {
      python:
        'import os\nprint(os.getuid() != 0, os.getcwd(), [l.split()[1] for l in open("/proc/self/status") if l.startswith("CapEff")])',
      node: 'console.log(process.getuid() !== 0, process.cwd())',
      typescript: 'const n: number = 2; console.log(n)',
      bash: 'echo "$PWD"',
    };
    const expected = {
      python: "True /workspace ['0000000000000000']\n",
      node: 'true /workspace\n',
      typescript: '2\n',
      bash: '/workspace\n',
    };
    for (const [language, source] of Object.entries(code)) {
      const run = async () =>
        (
          await callTool<{ stdout: string; sandbox_mode: string; warm: boolean }>(
            server.client,
            'execute_code',
            {
              language,
              code: source,
            },
          )
        ).value;
      const first = await run();
      // Once the pool holds a container of the language (it may still be starting), a run takes it.
      expect(await warmReady(server.client, language), `${language}: the pool fills`).toBe(true);
      const second = await run();
      for (const value of [first, second])
        expect(value).toMatchObject({
          sandbox_mode: 'docker',
          stdout: expected[language as keyof typeof expected],
        });
      expect(second.warm, language).toBe(true);
    }
  });

  it('keeps a session, reports the memory limit, and keeps a command container', async () => {
    const { value: session } = await callTool<{ session_id: string }>(server.client, 'start_session', {
      language: 'python',
    });
    await callTool(server.client, 'send_to_session', { session_id: session.session_id, code: 'x = 41' });
    const { value: sent } = await callTool<{ stdout: string }>(server.client, 'send_to_session', {
      session_id: session.session_id,
      code: 'x + 1',
    });
    expect(sent.stdout).toBe('42\n');
    const { value: oom } = await callTool<{ limit?: string; success: boolean }>(
      server.client,
      'execute_code',
      {
        language: 'python',
        code: 'b = bytearray(2048 * 1024 * 1024)',
      },
    );
    expect(oom).toMatchObject({ success: false, limit: 'memory' });
    await callTool(server.client, 'execute_command', { command: 'echo kept > /tmp/k' });
    const { value: again } = await callTool<{ stdout: string }>(server.client, 'execute_command', {
      command: 'cat /tmp/k',
    });
    expect(again.stdout).toBe('kept\n');
  });

  it('leaves no container behind after a SIGKILL of its server', async () => {
    const killed = await startServer({ env });
    await callTool(killed.client, 'start_session', { language: 'bash' });
    await callTool(killed.client, 'execute_code', { language: 'python', code: 'print(1)' });
    expect(containersOf(killed.pid).length).toBeGreaterThan(0);
    process.kill(killed.pid, 'SIGKILL');
    expect(await eventually(() => containersOf(killed.pid).length === 0, 20_000)).toBe(true);
    await killed.close().catch(() => {});
  });

  it.skipIf(!RUNSC)(
    'runs under gVisor (CODEXEC_DOCKER_RUNTIME=runsc): warm runs, a session, no network',
    async () => {
      const gvisor = await startServer({ env: { ...env, CODEXEC_DOCKER_RUNTIME: 'runsc' } });
      // runsc chowns a container's stdio to its user: never the host's /dev/null (docker-mode.test.ts).
      const devNull = () => [statSync('/dev/null').uid, statSync('/dev/null').gid];
      const before = devNull();
      try {
        const probe = async () =>
          (
            await callTool<{ stdout: string; warm: boolean }>(gvisor.client, 'execute_code', {
              language: 'python',
              code: 'import os, socket\ns = socket.socket()\ns.settimeout(2)\ntry:\n    s.connect(("1.1.1.1", 53)); print("connected")\nexcept OSError:\n    print(os.listdir("/sys/class/net"))',
            })
          ).value;
        expect((await probe()).stdout).toBe("['lo']\n");
        expect(await warmReady(gvisor.client, 'python')).toBe(true);
        const warm = await probe();
        expect(warm.stdout).toBe("['lo']\n");
        expect(warm.warm).toBe(true);
        await callTool(gvisor.client, 'start_session', { language: 'bash' });
        // Used warm containers are removed meanwhile (reaper.ts): the running ones, the session's among them.
        const running = docker('ps', '--filter', `label=codexec.pid=${gvisor.pid}`, '--format', '{{.Names}}')
          .split('\n')
          .filter(Boolean);
        expect(running.length).toBeGreaterThan(0);
        const runtimes = running.flatMap((name) => {
          const found = spawnSync('docker', ['inspect', '--format', '{{.HostConfig.Runtime}}', name], {
            encoding: 'utf8',
            env: { ...process.env, DOCKER_HOST: host },
          });
          return found.status === 0 ? [found.stdout.trim()] : [];
        });
        expect(runtimes.length).toBeGreaterThan(0);
        expect(new Set(runtimes)).toEqual(new Set(['runsc']));
        expect(devNull()).toEqual(before);
      } finally {
        await gvisor.close();
      }
    },
  );

  it('refuses docker mode, naming the fix, when the daemon does not know the runtime', async () => {
    const unknown = await startServer({ env: { ...env, CODEXEC_DOCKER_RUNTIME: 'codexec-no-such-runtime' } });
    try {
      const { isError, value } = await callTool<{ code: string; error: string }>(
        unknown.client,
        'execute_code',
        {
          language: 'bash',
          code: 'echo hi',
        },
      );
      expect(isError).toBe(true);
      expect(value.code).toBe('SANDBOX_UNAVAILABLE');
      expect(value.error).toContain('does not know the runtime "codexec-no-such-runtime"');
      expect(value.error).toContain('--add-runtime');
    } finally {
      await unknown.close();
    }
  });
});
