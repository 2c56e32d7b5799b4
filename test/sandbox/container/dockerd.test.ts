// Sandbox mode docker on the docker engine itself: a dockerd (Debian's docker.io) started here on
// its own socket and data root, stopped by its pid; the image built into it from the host. The
// rest of the docker-mode suite runs on podman; this proves the docker CLI's path end to end.
// The whole suite runs on docker too: CODEXEC_CONTAINER_ENGINE=docker DOCKER_HOST=unix://… npx vitest run test/sandbox/container test/hostile
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLI, callTool, startServer, type TestServer, tempDir } from '../../helpers/server.js';
import { eventually } from './engine.js';

const IMAGE = 'codexec-sandbox-dockerd-test';

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
    daemon = spawn(
      'dockerd',
      [
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
      let warm = false;
      for (let i = 0; i < 3; i++) {
        const { value } = await callTool<{ stdout: string; sandbox_mode: string; warm: boolean }>(
          server.client,
          'execute_code',
          { language, code: source },
        );
        expect(value).toMatchObject({
          sandbox_mode: 'docker',
          stdout: expected[language as keyof typeof expected],
        });
        warm ||= value.warm;
        await new Promise((resolve) => setTimeout(resolve, 400));
      }
      expect(warm, language).toBe(true);
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
});
