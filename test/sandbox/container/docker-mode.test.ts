// Sandbox mode docker through the real server, the real engine (podman here) and the real image.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { callTool, startServer, type TestServer } from '../../helpers/server.js';
import { containersOf, DOCKER_MODE, ensureImage, eventually, sessionContainersOf } from './engine.js';

const DOCKER = DOCKER_MODE;

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

const python = (server: TestServer, code: string, extra: Record<string, unknown> = {}) =>
  callTool<Run>(server.client, 'execute_code', { language: 'python', code, ...extra });

beforeAll(() => ensureImage(), 600_000);

describe('sandbox mode docker', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startServer({ env: DOCKER });
  });
  afterAll(async () => {
    const pid = server.pid;
    await server.close();
    expect(await eventually(() => containersOf(pid).length === 0)).toBe(true);
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
      const runs: Run[] = [];
      for (let i = 0; i < 3; i++) {
        const { value } = await callTool<Run>(server.client, 'execute_code', { language, code: source });
        runs.push(value);
        await new Promise((resolve) => setTimeout(resolve, 400)); // the pool refills
      }
      for (const run of runs) {
        expect(run, language).toMatchObject({ success: true, sandbox_mode: 'docker' });
        expect(run.stdout).toBe(expected[language as keyof typeof expected]);
      }
      expect(
        runs.some((run) => run.warm),
        `${language}: a warm container was used`,
      ).toBe(true);
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
        'try:\n    open("/x", "w")\nexcept OSError as e:\n    print("root", e.errno)',
    );
    expect(value.stdout).toBe('usr 30\nroot 30\n'); // EROFS
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
    const { value } = await python(
      server,
      'import os\nprint(os.getuid(), os.getgid())\n' +
        'for line in open("/proc/self/status"):\n    if line.startswith(("Cap", "NoNewPrivs")): print(line.split()[0], line.split()[1])',
    );
    const lines = value.stdout.trim().split('\n');
    expect(lines[0]).not.toMatch(/^0 /);
    expect(lines.slice(1)).toEqual([
      'CapInh: 0000000000000000',
      'CapPrm: 0000000000000000',
      'CapEff: 0000000000000000',
      'CapBnd: 0000000000000000',
      'CapAmb: 0000000000000000',
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
    await callTool(server.client, 'close_session', { session_id: started.session_id });
    expect(await eventually(() => sessionContainersOf(server.pid).length === 0)).toBe(true);
  });
});

describe('execute_command in sandbox mode docker', () => {
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
      const names = containersOf(pid);
      expect(names).toHaveLength(1);
      // /tmp is the container's own (not the host's, not a fresh one): the same container ran both.
      const second = await command('cat /tmp/kept made.txt');
      expect(second.stdout).toBe('state\nfile\n');
      const stopped = await command('sleep 60 & sleep 60', 2);
      expect(stopped).toMatchObject({ success: false, timed_out: true });
      expect((await command('echo after')).stdout).toBe('after\n');
      expect(containersOf(pid)).toEqual(names);
    } finally {
      await server.close();
    }
    expect(await eventually(() => containersOf(pid).length === 0)).toBe(true);
  });
});

describe('sandbox mode docker limits', () => {
  it.each(['cold', 'warm'])(
    'reports a %s run killed at the container memory limit as limit "memory"',
    async (kind) => {
      const server = await startServer({
        env: { ...DOCKER, CODEXEC_DOCKER_MEMORY: '64m', CODEXEC_POOL_SIZE: kind === 'cold' ? '0' : '1' },
      });
      try {
        if (kind === 'warm') {
          await python(server, 'print(1)'); // starts the pool
          await new Promise((resolve) => setTimeout(resolve, 1000));
        }
        const started = Date.now();
        const { value } = await python(server, 'b = bytearray(400 * 1024 * 1024)\nprint("survived")');
        expect(value).toMatchObject({ success: false, limit: 'memory', warm: kind === 'warm' });
        expect(value.stdout).toBe('');
        // Not the timeout: the run ends with its container.
        expect(Date.now() - started).toBeLessThan(10_000);
      } finally {
        await server.close();
      }
    },
  );

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
