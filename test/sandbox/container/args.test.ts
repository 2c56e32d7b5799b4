// The container command line as data (no engine needed).
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { buildContainerArgs, type ContainerRun, pathMapper } from '../../../src/sandbox/container/args.js';
import { limitCounters } from '../../../src/sandbox/container/limits.js';
import { runtimeArgs } from '../../../src/sandbox/container/runtime.js';
import type { SandboxSpec } from '../../../src/sandbox/index.js';

const workspace = mkdtempSync(join(tmpdir(), 'codexec-args-'));
const extra = mkdtempSync(join(tmpdir(), 'codexec-args-extra-'));
writeFileSync(join(extra, 'tool.py'), '');

const spec: SandboxSpec = {
  argv: ['/opt/host/python3.11', join(workspace, '_codexec_script.py'), 'arg'],
  cwd: workspace,
  env: {
    HOME: workspace,
    PYTHONPATH: `${join(extra, 'tool.py')}:/nowhere`,
    LANG: 'C.UTF-8',
    PATH: `${join(workspace, '.venv', 'bin')}:/root/.pyenv/shims:/usr/bin:/opt/host-only/bin`,
  },
  writablePaths: [workspace],
  readablePaths: [join(extra, 'tool.py')],
  limits: { memoryMb: 512, maxProcs: 64, maxFileMb: 8 },
  network: 'none',
  stdin: 'ignore',
};
const run: ContainerRun = {
  name: 'codexec-test-0',
  labels: { codexec: '1', 'codexec.pid': '42' },
  image: {
    name: 'img',
    interpreters: { python: '/usr/bin/python3', bash: '/bin/bash' },
    path: ['/usr/local/bin', '/usr/bin'],
  },
  user: { uid: 65534, gid: 65534 },
  memory: '256m',
  cpus: 1.5,
  network: 'none',
  wrapper: '/pkg/drivers/container_init.sh',
};

/** The value after each occurrence of `flag`. */
const values = (args: string[], flag: string) =>
  args.flatMap((arg, i) => (arg === flag ? [args[i + 1]] : []));

describe('buildContainerArgs', () => {
  const args = buildContainerArgs(spec, run);

  it('confines: no network, limits, read-only root, private /tmp, no capabilities, non-root, no privileges', () => {
    expect(args[0]).toBe('run');
    expect(args).toContain('--rm');
    expect(args).toContain('--read-only');
    expect(args).toContain('--init');
    expect(values(args, '--network')).toEqual(['none']);
    expect(values(args, '--memory')).toEqual(['256m']);
    expect(values(args, '--memory-swap')).toEqual(['256m']);
    expect(values(args, '--cpus')).toEqual(['1.5']);
    expect(values(args, '--pids-limit')).toEqual(['64']);
    expect(values(args, '--tmpfs')).toEqual(['/tmp:rw,size=100m,mode=1777']);
    expect(values(args, '--cap-drop')).toEqual(['ALL']);
    expect(values(args, '--security-opt')).toEqual(['no-new-privileges']);
    expect(values(args, '--user')).toEqual(['65534:65534']);
    expect(values(args, '--ulimit')).toContain(`fsize=${8 * 1024 * 1024}`);
    expect(values(args, '--label')).toEqual(['codexec=1', 'codexec.pid=42']);
    expect(values(args, '--ulimit')).toContain('nproc=4096:4096');
  });

  it('under gVisor, bounds the code by RLIMIT_NPROC and leaves the host cgroup room for gVisor', () => {
    const gvisor = buildContainerArgs(spec, { ...run, gvisor: true });
    expect(values(gvisor, '--ulimit')).toContain('nproc=64:64');
    expect(values(gvisor, '--ulimit')).not.toContain('nproc=4096:4096');
    expect(values(gvisor, '--pids-limit')).toEqual([String(1024 + 64 * 64)]);
  });

  it('mounts the workspace at /workspace and other paths under /opt/codexec, rewriting every path', () => {
    expect(values(args, '--volume')).toEqual([
      `${workspace}:/workspace:rw`,
      `${join(extra, 'tool.py')}:/opt/codexec/ro/1/tool.py:ro`,
    ]);
    expect(values(args, '--workdir')).toEqual(['/workspace']);
    const env = values(args, '--env');
    expect(env).toContain('HOME=/workspace');
    expect(env).toContain('PYTHONPATH=/opt/codexec/ro/1/tool.py:/nowhere');
    // The host's PATH never reaches the container: only entries in a mount, then the image's.
    expect(env).toContain('PATH=/workspace/.venv/bin:/usr/local/bin:/usr/bin');
    const program = args.slice(args.indexOf('img') + 1);
    expect(program).toEqual([
      '/bin/bash',
      '/pkg/drivers/container_init.sh',
      'run',
      '/workspace/.codexec-limit',
      '-',
      '/usr/bin/python3',
      '/workspace/_codexec_script.py',
      'arg',
    ]);
  });

  it("gives every container a pipe for stdin, never the host's /dev/null (runtimes chown their stdio)", () => {
    expect(buildContainerArgs({ ...spec, stdin: 'ignore' }, run)).toContain('--interactive');
  });

  it('starts a driver through the control launcher when the spec has a control channel', () => {
    const control = buildContainerArgs(
      { ...spec, control: true, stdin: 'pipe' },
      { ...run, controlLauncher: '/pkg/drivers/container_control.py' },
    );
    expect(control).toContain('--interactive');
    const program = control.slice(control.indexOf('img') + 1);
    // A session's driver (stdin kept open): its container ends with it.
    expect(program.slice(2, 3)).toEqual(['run']);
    expect(program.slice(5, 10)).toEqual([
      '/usr/bin/python3',
      '-I',
      '-S',
      '/pkg/drivers/container_control.py',
      '/workspace/.codexec-control',
    ]);
  });

  it('keeps a warm driver’s container, stopped, once its program is over (removed in batches)', () => {
    const warm = buildContainerArgs({ ...spec, control: true }, { ...run, controlLauncher: '/pkg/c.py' });
    expect(warm.slice(warm.indexOf('img') + 1)[2]).toBe('linger');
  });

  it('maps a path to the deepest mount holding it and leaves others alone', () => {
    const map = pathMapper([
      { host: '/a', inside: '/workspace', writable: true },
      { host: '/a/b', inside: '/opt/x', writable: false },
    ]);
    expect(map('/a/c')).toBe('/workspace/c');
    expect(map('/a/b/c')).toBe('/opt/x/c');
    expect(map('/ab')).toBe('/ab');
  });
});

describe('limitCounters', () => {
  it('reads cgroup v1 memory and pids counters, and v2 where the path is the host’s', () => {
    const v1 = limitCounters('12:pids:/libpod_parent/libpod-1;4:memory:/libpod_parent/libpod-1;0::/');
    expect(v1.map((c) => [c.file, c.key, c.limit])).toEqual([
      ['/sys/fs/cgroup/memory/libpod_parent/libpod-1/memory.oom_control', 'oom_kill', 'memory'],
      ['/sys/fs/cgroup/pids/libpod_parent/libpod-1/pids.events', 'max', 'processes'],
    ]);
    expect(limitCounters('0::/machine.slice/libpod-2.scope').map((c) => c.file)).toEqual([
      '/sys/fs/cgroup/machine.slice/libpod-2.scope/memory.events',
      '/sys/fs/cgroup/machine.slice/libpod-2.scope/pids.events',
    ]);
    expect(limitCounters('0::/')).toEqual([]);
  });
});

describe('runtimeArgs (CODEXEC_DOCKER_RUNTIME)', () => {
  it('adds nothing without a runtime', () => {
    expect(runtimeArgs({ name: 'podman' }, 'none')).toEqual({ before: [], run: [] });
    expect(runtimeArgs({ name: 'docker' }, 'none')).toEqual({ before: [], run: [] });
  });

  it('gives docker the runtime as an option of run', () => {
    expect(runtimeArgs({ name: 'docker', runtime: 'runsc' }, 'none')).toEqual({
      before: [],
      run: ['--runtime', 'runsc'],
    });
  });

  it('gives runsc under podman host sockets to open and its own network none or host', () => {
    const uds = ['--runtime-flag', 'host-uds=all'];
    expect(runtimeArgs({ name: 'podman', runtime: '/usr/bin/runsc' }, 'none').before).toEqual([
      ...uds,
      '--runtime-flag',
      'network=none',
    ]);
    expect(runtimeArgs({ name: 'podman', runtime: 'runsc' }, 'host').before).toEqual([
      ...uds,
      '--runtime-flag',
      'network=host',
    ]);
    expect(runtimeArgs({ name: 'podman', runtime: 'runsc' }, 'bridge').before).toEqual(uds);
  });

  it('gives another runtime under podman no flags of runsc (engine.ts sets --runtime itself)', () => {
    expect(runtimeArgs({ name: 'podman', runtime: 'crun' }, 'none')).toEqual({ before: [], run: [] });
  });
});
