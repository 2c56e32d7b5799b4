// A run's OCI bundle as data: the engine's template configuration with the run's parts written in.
import { describe, expect, it } from 'vitest';
import {
  bundleConfig,
  fitsTemplate,
  initPrefix,
  type OciConfig,
} from '../../../src/sandbox/container/oci/bundle.js';
import { narrowed } from '../../../src/sandbox/container/oci/seccomp.js';

const TEMPLATE: OciConfig = {
  ociVersion: '1.0.2-dev',
  process: {
    user: { uid: 65534, gid: 65534, umask: 18, additionalGids: [65534, 27] },
    args: ['/run/podman-init', '--', '/usr/bin/bash', '-c', 'exit 0'],
    env: ['PATH=/usr/bin:/bin', 'HOME=/tmp', 'container=podman'],
    cwd: '/',
    rlimits: [
      { type: 'RLIMIT_NOFILE', hard: 1024, soft: 1024 },
      { type: 'RLIMIT_NPROC', hard: 4096, soft: 4096 },
      { type: 'RLIMIT_FSIZE', hard: 1048576, soft: 1048576 },
    ],
    noNewPrivileges: true,
    capabilities: {},
  },
  root: { path: '/var/lib/containers/storage/overlay/x/merged', readonly: true },
  mounts: [
    { destination: '/proc', type: 'proc', source: 'proc' },
    {
      destination: '/dev/shm',
      type: 'bind',
      source: '/var/lib/containers/x/userdata/shm',
      options: ['bind'],
    },
    { destination: '/etc/hosts', type: 'bind', source: '/run/containers/x/userdata/hosts', options: ['ro'] },
  ],
  linux: {
    cgroupsPath: '/libpod_parent/libpod-x',
    resources: { memory: { limit: 536870912, swap: 536870912 }, pids: { limit: 64 } },
    namespaces: [{ type: 'pid' }, { type: 'network' }, { type: 'mount' }],
    seccomp: { defaultAction: 'SCMP_ACT_ERRNO', syscalls: [] },
    maskedPaths: ['/proc/kcore'],
  },
};

const RUN = {
  argv: [
    '/usr/bin/bash',
    '/opt/codexec/drivers/container_init.sh',
    'run',
    '/workspace/.codexec-limit',
    '-',
    'python3',
    'x.py',
  ],
  env: { HOME: '/workspace', PATH: '/usr/local/bin:/usr/bin' },
  cwd: '/workspace',
  user: { uid: 1000, gid: 1000 },
  mounts: [
    { host: '/home/srv/sandbox/exec_1', inside: '/workspace', writable: true },
    { host: '/usr/lib/codexec/drivers', inside: '/opt/codexec/drivers', writable: false },
    { host: '/srv/env/lib', inside: '/opt/codexec/ro/2/lib', writable: false },
  ],
  cgroupsPath: '/libpod_parent/codexec-1-0',
  pids: 32,
  rlimits: { nproc: 4096, fsize: 10 * 1024 * 1024 },
};

describe('an OCI bundle from the engine template', () => {
  const init = initPrefix(TEMPLATE, ['/usr/bin/bash', '-c', 'exit 0']);
  const config = bundleConfig(TEMPLATE, init, RUN);

  it('keeps what the engine confined the template with: seccomp, masks, namespaces, root, memory', () => {
    expect(config.linux.seccomp).toEqual(TEMPLATE.linux.seccomp);
    expect(config.linux.maskedPaths).toEqual(['/proc/kcore']);
    expect(config.linux.namespaces).toEqual(TEMPLATE.linux.namespaces);
    expect(config.root).toEqual({ path: TEMPLATE.root.path, readonly: true });
    expect(config.linux.resources?.memory).toEqual({ limit: 536870912, swap: 536870912 });
    expect(config.process.noNewPrivileges).toBe(true);
    expect(config.process.capabilities).toEqual({});
  });

  it("writes in the run's process, user (no other groups), limits and cgroup", () => {
    expect(config.process.args).toEqual(['/run/podman-init', '--', ...RUN.argv]);
    expect(config.process.user).toEqual({ uid: 1000, gid: 1000, umask: 18, additionalGids: [1000] });
    expect(config.process.cwd).toBe('/workspace');
    expect(config.process.env).toEqual([
      'PATH=/usr/local/bin:/usr/bin',
      'HOME=/workspace',
      'container=podman',
    ]);
    expect(config.process.rlimits).toEqual([
      { type: 'RLIMIT_NOFILE', hard: 1024, soft: 1024 },
      { type: 'RLIMIT_NPROC', hard: 4096, soft: 4096 },
      { type: 'RLIMIT_FSIZE', hard: 10485760, soft: 10485760 },
    ]);
    expect(config.linux.resources?.pids).toEqual({ limit: 32 });
    expect(config.linux.cgroupsPath).toBe('/libpod_parent/codexec-1-0');
  });

  it('gives the run its own /dev/shm and the tmpfs its read-only paths lie in, then its binds', () => {
    const mounts = config.mounts.map((mount) => [mount.destination, mount.type, mount.source, mount.options]);
    expect(mounts).toEqual([
      ['/proc', 'proc', 'proc', undefined],
      ['/etc/hosts', 'bind', '/run/containers/x/userdata/hosts', ['ro']],
      ['/dev/shm', 'tmpfs', 'shm', ['rw', 'nosuid', 'noexec', 'nodev', 'mode=1777', 'size=65536k']],
      ['/opt/codexec', 'tmpfs', 'tmpfs', ['rw', 'nosuid', 'nodev', 'mode=755', 'size=1m']],
      ['/workspace', 'bind', '/home/srv/sandbox/exec_1', ['rw', 'rprivate', 'rbind']],
      ['/opt/codexec/drivers', 'bind', '/usr/lib/codexec/drivers', ['ro', 'rprivate', 'rbind']],
      ['/opt/codexec/ro/2/lib', 'bind', '/srv/env/lib', ['ro', 'rprivate', 'rbind']],
    ]);
  });

  it('takes only mounts the shared read-only root has room for', () => {
    expect(fitsTemplate(RUN.mounts)).toBe(true);
    const hostDir = { host: '/home/alice/project', inside: '/home/alice/project', writable: true };
    expect(fitsTemplate([...RUN.mounts, hostDir])).toBe(false);
    expect(fitsTemplate([{ host: '/x', inside: '/opt/codexecx', writable: false }])).toBe(false);
    expect(() => bundleConfig(TEMPLATE, init, { ...RUN, mounts: [hostDir] })).toThrow(TypeError);
  });

  it("refuses a template whose argv does not end with its program (the engine's init is what remains)", () => {
    expect(init).toEqual(['/run/podman-init', '--']);
    expect(() => initPrefix(TEMPLATE, ['/bin/sh', '-c', 'exit 0'])).toThrow(/does not end with its program/);
  });
});

describe("podman's seccomp profile, narrowed", () => {
  const profile = {
    defaultAction: 'SCMP_ACT_ERRNO',
    syscalls: [
      { names: ['read', 'clone', 'clone3', 'unshare', 'keyctl', 'setns', 'write'], action: 'SCMP_ACT_ALLOW' },
      { names: ['setns', 'bpf'], action: 'SCMP_ACT_ERRNO', errnoRet: 1 },
      { names: ['personality'], action: 'SCMP_ACT_ALLOW', args: [{ index: 0, value: 0, op: 'SCMP_CMP_EQ' }] },
    ],
  };

  it('refuses new namespaces and the keyrings; allows clone only without namespace flags', () => {
    expect(narrowed(profile)).toEqual({
      defaultAction: 'SCMP_ACT_ERRNO',
      syscalls: [
        { names: ['read', 'write'], action: 'SCMP_ACT_ALLOW' },
        { names: ['setns', 'bpf'], action: 'SCMP_ACT_ERRNO', errnoRet: 1 },
        {
          names: ['personality'],
          action: 'SCMP_ACT_ALLOW',
          args: [{ index: 0, value: 0, op: 'SCMP_CMP_EQ' }],
        },
        { names: ['unshare', 'keyctl', 'add_key', 'request_key'], action: 'SCMP_ACT_ERRNO', errnoRet: 1 },
        {
          names: ['clone'],
          action: 'SCMP_ACT_ALLOW',
          args: [{ index: 0, value: 0x7e020000, valueTwo: 0, op: 'SCMP_CMP_MASKED_EQ' }],
        },
        { names: ['clone3'], action: 'SCMP_ACT_ERRNO', errnoRet: 38 },
      ],
    });
  });
});
