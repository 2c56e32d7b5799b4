// `codexec image build --from-host` with real podman: the image runs the host's interpreters at
// their host paths, locked down as the backend runs it (no network, read-only, uid 65534), and
// holds nothing of the host beyond the copied set.
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Interpreters } from '../../../src/runtimes/index.js';
import { type ContainerEngine, findEngine, IMAGE_LABELS } from '../../../src/sandbox/container/index.js';
import { baseEnv, CLI, tempDir } from '../../helpers/server.js';

const TAG = `codexec-test-image-${randomBytes(4).toString('hex')}`;
const home = tempDir();
const interpreters = new Interpreters({});
let engine: ContainerEngine;
let build: { code: number | null; stdout: string; stderr: string };

function codexec(args: string[], env: Record<string, string> = {}) {
  const out = spawnSync(process.execPath, [CLI, ...args], {
    env: { ...baseEnv(home), ...env },
    encoding: 'utf8',
    timeout: 90_000,
  });
  return { code: out.status, stdout: out.stdout, stderr: out.stderr };
}

function podman(args: string[]) {
  const out = spawnSync(engine.binary, [...engine.global, ...args], { encoding: 'utf8', timeout: 30_000 });
  return { code: out.status, stdout: out.stdout, stderr: out.stderr };
}

/** Runs in the image as the backend does: no network, read-only root, tmpfs /tmp, uid 65534. */
function inImage(command: string[], user = '65534:65534') {
  return podman([
    ...['run', '--rm', '--network', 'none', '--read-only', '--tmpfs', '/tmp:size=100m'],
    ...['--cap-drop', 'ALL', '--security-opt', 'no-new-privileges', '--pids-limit', '64'],
    ...['--memory', '256m', '--user', user, '--ulimit', 'nofile=1024:1024', '--ulimit', 'nproc=4096:4096'],
    TAG,
    ...command,
  ]);
}

/** Whether the host interpreter can import a module: the image promises no more than that. */
function hostImports(python: string, module: string): boolean {
  return spawnSync(python, ['-c', `import ${module}`]).status === 0;
}

beforeAll(async () => {
  engine = await findEngine('podman');
  build = codexec(['image', 'build', '--from-host', '--tag', TAG, '--engine', 'podman']);
}, 100_000);

afterAll(() => {
  if (engine) podman(['rmi', '--force', TAG]);
  rmSync(home, { recursive: true, force: true });
});

describe('codexec image build --from-host', () => {
  it('builds with no registry and prints tag, engine, size and time', () => {
    expect(build.stderr).not.toMatch(/failed/);
    expect(build.code).toBe(0);
    expect(build.stdout).toContain(`built ${TAG} (from host) with podman`);
    expect(build.stdout).toMatch(/size: +\d+ MB/);
    expect(build.stdout).toMatch(/seconds: +\d+\.\d/);
  });

  it('labels the interpreters it copied, at their host paths, and they are there', async () => {
    const { stdout } = podman(['image', 'inspect', '--format', '{{json .Config.Labels}}', TAG]);
    const labels = JSON.parse(stdout) as Record<string, string>;
    const [python, node, bash] = await Promise.all(
      (['python', 'node', 'bash'] as const).map((kind) => interpreters.get(kind)),
    );
    expect(labels).toMatchObject({
      [IMAGE_LABELS.sandbox]: '1',
      [IMAGE_LABELS.fromHost]: '1',
      [IMAGE_LABELS.python]: python,
      [IMAGE_LABELS.node]: node,
      [IMAGE_LABELS.bash]: bash,
    });
    const check = inImage([
      '/bin/sh',
      '-c',
      `test -x ${python} && test -x ${node} && test -x ${bash} && echo ok`,
    ]);
    expect(check.stdout).toBe('ok\n');
  });

  it('runs python with json and whatever of numpy and matplotlib the host python imports', async () => {
    const python = await interpreters.get('python');
    const modules = ['json', ...['numpy', 'matplotlib', 'pip'].filter((name) => hostImports(python, name))];
    const code = `import ${modules.join(', ')}; print("py", json.dumps([1, 2]))`;
    expect(inImage([python, '-c', code])).toMatchObject({ code: 0, stdout: 'py [1, 2]\n' });
    expect(inImage(['python3', '-c', 'print(6 * 7)']).stdout).toBe('42\n');
  });

  it('runs node and its npm', async () => {
    const node = await interpreters.get('node');
    expect(inImage([node, '-e', 'console.log(1+1)'])).toMatchObject({ code: 0, stdout: '2\n' });
    expect(inImage(['npm', '--version']).stdout).toMatch(/^\d+\.\d+\.\d+\n$/);
  });

  it('runs bash with the everyday tools', async () => {
    const bash = await interpreters.get('bash');
    const run = inImage([bash, '-c', 'ls /workspace; echo hi | grep hi | wc -l; id -u; pwd']);
    expect(run).toMatchObject({ code: 0, stdout: '1\n65534\n/workspace\n' });
  });

  it('has a writable /tmp (1777) and nothing else writable', () => {
    const run = inImage([
      '/bin/sh',
      '-c',
      'echo x > /tmp/f && cat /tmp/f; ls -ld /tmp; touch /usr/x || echo ro',
    ]);
    expect(run.stdout).toMatch(/^x\ndrwxrwxrwt .*\nro\n$/);
  });

  it('holds no host file beyond the copied set', () => {
    const cwd = process.cwd();
    const probe = inImage(
      [
        '/bin/sh',
        '-c',
        'ls -A /root; for p in /work /home /etc/shadow /etc/ssl/private /etc/ssh "$1"; do test -e "$p" && echo "$p"; done; ' +
          'grep -c . /etc/passwd',
        'sh',
        cwd,
      ],
      '0:0',
    );
    expect(probe).toMatchObject({ code: 0, stdout: '3\n' });
  });
});

describe('codexec image build --engine docker', () => {
  it('exits non-zero with a clear message when no docker daemon answers', () => {
    const run = codexec(['image', 'build', '--from-host', '--engine', 'docker', '--tag', TAG], {
      DOCKER_HOST: 'unix:///nonexistent/docker.sock',
    });
    expect(run.code).not.toBe(0);
    expect(run.stderr).toMatch(/^codexec: no container engine answers \(docker: /m);
  });
});
