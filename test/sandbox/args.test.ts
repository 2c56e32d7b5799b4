import { describe, expect, it } from 'vitest';
import { kernelAtLeast } from '../../src/sandbox/host/setup.js';
import { interpreterMount, type SystemMount } from '../../src/sandbox/host/system.js';
import { buildBwrapArgs, nprocInside, reportsEnd, rlimitsFor } from '../../src/sandbox/namespace/args.js';
import type { SandboxSpec } from '../../src/sandbox/types.js';

const spec: SandboxSpec = {
  argv: ['/usr/bin/python3', '/home/u/.codexec/sandbox/exec_1/_codexec_script.py', 'arg'],
  cwd: '/home/u/.codexec/sandbox/exec_1',
  env: { PATH: '/usr/bin:/bin', HOME: '/home/u' },
  writablePaths: ['/home/u/.codexec/sandbox/exec_1'],
  readablePaths: ['/home/u/.codexec/sandbox/exec_1/_codexec_script.py', '/home/u/.codexec/envs/python'],
  limits: { memoryMb: 512, maxProcs: 64, maxFileMb: 100, cpuSeconds: 31 },
  network: 'none',
  stdin: 'ignore',
};
const system: SystemMount[] = [
  { kind: 'ro-bind', path: '/usr' },
  { kind: 'symlink', target: 'usr/bin', path: '/bin' },
  { kind: 'dir', path: '/etc' },
  { kind: 'ro-bind', path: '/etc/ld.so.cache' },
];
const tools = {
  bwrap: '/usr/bin/bwrap',
  setpriv: '/usr/bin/setpriv',
  prlimit: '/usr/bin/prlimit',
};
const root = {
  tools,
  system,
  identity: { uid: 65534, gid: 65534 },
  cgroup: true,
  seccomp: true,
  cpuSeconds: 31,
};
const user = { tools: { bwrap: '/usr/bin/bwrap' }, system, cgroup: false, seccomp: true };

/** Index of `flag` followed by `values` in argv, or -1. */
function find(argv: string[], ...sequence: string[]): number {
  return argv.findIndex((_, i) => sequence.every((item, j) => argv[i + j] === item));
}

describe('buildBwrapArgs as root', () => {
  const argv = buildBwrapArgs(spec, root);
  const bwrapAt = argv.indexOf('/usr/bin/bwrap');
  const setprivAt = argv.indexOf('/usr/bin/setpriv');

  it('chains prlimit → bwrap (held on its seccomp fd until in the cgroup) → setpriv → the code', () => {
    expect(argv[0]).toBe('/usr/bin/prlimit');
    expect(argv[argv.indexOf('--') + 1]).toBe('/usr/bin/bwrap');
    // bwrap's --block-fd goes on at end of file (the server gone): the seccomp fd holds it instead.
    expect(argv).not.toContain('--block-fd');
    expect(find(argv, '--seccomp', '4')).toBeGreaterThan(bwrapAt);
    expect(setprivAt).toBeGreaterThan(bwrapAt);
    expect(argv.slice(setprivAt + 1, setprivAt + 9)).toEqual([
      '--reuid=65534',
      '--regid=65534',
      '--clear-groups',
      '--inh-caps=-all',
      '--ambient-caps=-all',
      '--bounding-set=-all',
      '--no-new-privs',
      '--',
    ]);
    expect(argv.slice(-3)).toEqual(spec.argv);
  });

  it('never creates a user namespace (it would map the code to host root) and keeps only setuid caps', () => {
    expect(argv).not.toContain('--unshare-user');
    expect(argv).not.toContain('--unshare-all');
    for (const flag of [
      '--unshare-pid',
      '--unshare-ipc',
      '--unshare-uts',
      '--unshare-net',
      '--die-with-parent',
    ]) {
      expect(argv).toContain(flag);
    }
    expect(find(argv, '--cap-drop', 'ALL')).toBeGreaterThan(0);
    const added = argv.flatMap((arg, i) => (arg === '--cap-add' ? [argv[i + 1]] : []));
    expect(added.sort()).toEqual(['CAP_DAC_READ_SEARCH', 'CAP_SETGID', 'CAP_SETPCAP', 'CAP_SETUID']);
  });

  it("a zygote's placeholder sandbox: same namespaces and mounts, no capability, setpriv or seccomp", () => {
    const placeholder = ['/usr/bin/cat', '/proc/sys/kernel/ostype', '-'];
    const zygote = buildBwrapArgs({ ...spec, argv: placeholder }, { ...root, placeholder: true });
    expect(zygote.slice(-3)).toEqual(placeholder);
    expect(zygote).not.toContain('/usr/bin/setpriv');
    expect(zygote).not.toContain('--seccomp');
    expect(zygote).not.toContain('--cap-add');
    expect(find(zygote, '--cap-drop', 'ALL')).toBeGreaterThan(0);
    expect(find(zygote, '--chdir', '/')).toBeGreaterThan(0);
    const flags = (args: string[]) => args.filter((arg) => arg.startsWith('--unshare') || arg === '--bind');
    expect(flags(zygote)).toEqual(flags(argv));
    expect(find(zygote, '--bind', spec.cwd, spec.cwd)).toBeGreaterThan(0);
  });

  it('sets rlimits, leaving memory and process count to the cgroup', () => {
    const limits = argv.slice(1, argv.indexOf('--'));
    expect(limits).toContain(`--fsize=${100 * 1024 * 1024}`);
    expect(limits).toContain('--cpu=31');
    expect(limits).toContain('--core=0');
    expect(limits).toContain('--nofile=1024');
    expect(limits.some((flag) => flag.startsWith('--as='))).toBe(true);
    expect(limits.some((flag) => flag.startsWith('--data=') || flag.startsWith('--nproc='))).toBe(false);
  });

  it('passes only the spec env, after --clearenv', () => {
    expect(argv).toContain('--clearenv');
    const set = argv.flatMap((arg, i) => (arg === '--setenv' ? [argv[i + 1]] : []));
    expect(set).toEqual(['PATH', 'HOME']);
  });

  it('mounts system dirs read-only, private /tmp and /dev/shm, the workspace read-write, nothing else', () => {
    expect(find(argv, '--ro-bind', '/usr', '/usr')).toBeGreaterThan(0);
    expect(find(argv, '--symlink', 'usr/bin', '/bin')).toBeGreaterThan(0);
    expect(find(argv, '--dir', '/etc')).toBeLessThan(find(argv, '--ro-bind', '/etc/ld.so.cache'));
    expect(
      find(argv, '--perms', '1777', '--size', String(512 * 1024 * 1024), '--tmpfs', '/tmp'),
    ).toBeGreaterThan(0);
    expect(find(argv, '--tmpfs', '/dev/shm')).toBeGreaterThan(0);
    expect(find(argv, '--bind', spec.cwd, spec.cwd)).toBeGreaterThan(0);
    // The script is inside the workspace: no separate mount. The package env is read-only.
    expect(
      find(argv, '--ro-bind', '/home/u/.codexec/envs/python', '/home/u/.codexec/envs/python'),
    ).toBeGreaterThan(0);
    const binds = argv.flatMap((arg, i) => (arg === '--bind' || arg === '--ro-bind' ? [argv[i + 1]] : []));
    expect(binds.sort()).toEqual(
      ['/etc/ld.so.cache', '/home/u/.codexec/envs/python', spec.cwd, '/usr'].sort(),
    );
    expect(find(argv, '--chdir', spec.cwd)).toBeGreaterThan(0);
    expect(find(argv, '--seccomp', '4')).toBeGreaterThan(0);
  });

  it('binds a copy of /etc from its source; the copy covers no host path under /etc', () => {
    const withCopy: SystemMount[] = [
      { kind: 'ro-bind', path: '/usr' },
      { kind: 'ro-bind', path: '/etc', source: '/tmp/codexec-etc-x/1' },
      { kind: 'ro-bind', path: '/etc/ssl' },
    ];
    const copied = buildBwrapArgs(
      { ...spec, readablePaths: ['/etc/ssl/certs', '/etc/other'] },
      { ...root, system: withCopy },
    );
    expect(find(copied, '--ro-bind', '/tmp/codexec-etc-x/1', '/etc')).toBeGreaterThan(0);
    expect(find(copied, '--ro-bind', '/etc/ssl', '/etc/ssl')).toBeGreaterThan(0);
    // Under a bind of the host's own path: already visible. Under the copy: bound on its own.
    expect(find(copied, '--ro-bind', '/etc/ssl/certs', '/etc/ssl/certs')).toBe(-1);
    expect(find(copied, '--ro-bind', '/etc/other', '/etc/other')).toBeGreaterThan(0);
  });
});

describe('buildBwrapArgs as a regular user', () => {
  it('uses a user namespace with nested ones disabled, and no setpriv', () => {
    const argv = buildBwrapArgs(spec, user);
    expect(argv[0]).toBe('/usr/bin/bwrap');
    for (const flag of ['--unshare-all', '--unshare-user', '--disable-userns']) expect(argv).toContain(flag);
    expect(argv).not.toContain('--share-net');
    expect(argv).not.toContain('--cap-add');
    expect(argv.slice(-3)).toEqual(spec.argv);
  });

  it('network host shares the network namespace', () => {
    expect(buildBwrapArgs({ ...spec, network: 'host' }, user)).toContain('--share-net');
    expect(buildBwrapArgs({ ...spec, network: 'host' }, root)).not.toContain('--unshare-net');
  });

  it('without prlimit or cgroups there is no wrapper; rlimit fallbacks need prlimit', () => {
    const argv = buildBwrapArgs(spec, user);
    expect(argv).not.toContain('--block-fd');
    const withPrlimit = buildBwrapArgs(spec, {
      ...user,
      tools: { ...user.tools, prlimit: '/usr/bin/prlimit' },
    });
    expect(withPrlimit).toContain(`--data=${512 * 1024 * 1024}`);
    expect(withPrlimit.some((flag) => flag.startsWith('--nproc='))).toBe(false); // per-uid: not for our own uid
  });

  it('limits the process count inside the user namespace, where the kernel counts it per namespace', () => {
    const counted = {
      ...user,
      tools: { ...user.tools, prlimit: '/usr/bin/prlimit' },
      nprocPerUserNamespace: true,
    };
    const argv = buildBwrapArgs(spec, counted);
    // After bwrap has made the namespace, right before the code; bwrap's init is one of its 65.
    expect(argv.slice(-6)).toEqual(['/usr/bin/prlimit', '--nproc=65', '--', ...spec.argv]);
    expect(argv.slice(0, argv.indexOf('/usr/bin/bwrap')).some((flag) => flag.startsWith('--nproc='))).toBe(
      false,
    );
    expect(nprocInside(spec, counted)).toBe(65);
    // Not where a cgroup counts, for a root server (RLIMIT_NPROC of its sandbox uid), in a zygote's
    // placeholder, on an older kernel, nor with a prlimit the sandbox cannot see.
    for (const options of [
      { ...counted, cgroup: true },
      { ...counted, ...root, cgroup: false },
      { ...counted, placeholder: true },
      { ...counted, nprocPerUserNamespace: false },
      { ...counted, tools: { ...counted.tools, prlimit: '/opt/util-linux/bin/prlimit' } },
    ])
      expect(nprocInside(spec, options)).toBeUndefined();
  });

  it('reads kernel releases: per-namespace process counts came with Linux 5.14', () => {
    expect(
      ['6.1.0-13-amd64', '5.14.0-362.el9.x86_64', '6.18.44-fc'].map((v) => kernelAtLeast(v, 5, 14)),
    ).toEqual([true, true, true]);
    expect(['5.10.0-28-amd64', '4.18.0-553.el8', 'x'].map((v) => kernelAtLeast(v, 5, 14))).toEqual([
      false,
      false,
      false,
    ]);
  });

  it('refuses an empty argv and dropping privileges without setpriv or the drop program', () => {
    expect(() => buildBwrapArgs({ ...spec, argv: [] }, user)).toThrow(/empty/);
    expect(() => buildBwrapArgs(spec, { ...user, identity: { uid: 1, gid: 1 } })).toThrow(/setpriv/);
  });
});

describe('buildBwrapArgs with the drop program', () => {
  it('drops to the identity with it instead of setpriv, right before the code', () => {
    const argv = buildBwrapArgs(spec, {
      ...root,
      identity: { uid: 1234, gid: 5678 },
      drop: '/etc/codexec-drop',
    });
    expect(argv).not.toContain('/usr/bin/setpriv');
    expect(argv.slice(-6)).toEqual(['/etc/codexec-drop', '1234', '5678', ...spec.argv]);
    expect(argv.indexOf('/etc/codexec-drop')).toBeGreaterThan(find(argv, '--seccomp', '4'));
    // The same capabilities survive bwrap as for setpriv: the program needs them to drop.
    expect(argv).toEqual(expect.arrayContaining(['--cap-add', 'CAP_SETUID', '--cap-add', 'CAP_SETGID']));
  });

  it('leaves ids it does not take (above 999999999) to setpriv', () => {
    const argv = buildBwrapArgs(spec, {
      ...root,
      identity: { uid: 1_000_000_000, gid: 1000 },
      drop: '/etc/codexec-drop',
    });
    expect(argv).not.toContain('/etc/codexec-drop');
    expect(argv).toContain('--reuid=1000000000');
  });

  it('is only for dropping root: a zygote placeholder and a user-namespace sandbox run without it', () => {
    const placeholder = buildBwrapArgs(spec, { ...root, drop: '/etc/codexec-drop', placeholder: true });
    expect(placeholder).not.toContain('/etc/codexec-drop');
    expect(buildBwrapArgs(spec, { ...user, drop: '/etc/codexec-drop' })).not.toContain('/etc/codexec-drop');
  });

  it("reports a one-shot run's end (-r) when the run has an end mark, counting its process", () => {
    const marked = { ...spec, endMark: '\n[codexec-end 0123456789abcdef]\n' };
    const options = { ...root, drop: '/etc/codexec-drop' };
    expect(buildBwrapArgs(marked, options).slice(-7)).toEqual([
      '/etc/codexec-drop',
      '-r',
      '65534',
      '65534',
      ...spec.argv,
    ]);
    expect(buildBwrapArgs(spec, options)).not.toContain('-r');
    // Without the drop program (setpriv) nothing reports: the run ends with its streams.
    expect(buildBwrapArgs(marked, root)).not.toContain('-r');
    expect(reportsEnd(marked, { ...options, placeholder: true })).toBe(false);
    // Without a cgroup, RLIMIT_NPROC counts the reporting process too.
    const nproc = (s: SandboxSpec) =>
      rlimitsFor(s, { ...options, cgroup: false }).find((limit) => limit.prlimit === 'nproc')?.value;
    expect([nproc(spec), nproc(marked)]).toEqual([64, 65]);
  });
});

describe('interpreterMount', () => {
  it('binds an install prefix outside the system dirs read-only', () => {
    expect(interpreterMount('/opt/py/bin/python3')).toBe('/opt/py');
    expect(interpreterMount('/root/.pyenv/versions/3.11.7/bin/python3.11', ['/root'])).toBe(
      '/root/.pyenv/versions/3.11.7',
    );
    const argv = buildBwrapArgs({ ...spec, argv: ['/opt/py/bin/python3', 'x.py'] }, root);
    expect(find(argv, '--ro-bind', '/opt/py', '/opt/py')).toBeGreaterThan(0);
  });

  it('never exposes a home directory or / through an interpreter prefix', () => {
    expect(interpreterMount('/root/bin/python3', ['/root'])).toBe('/root/bin/python3');
    expect(interpreterMount('/home/u/python', ['/home/u'])).toBe('/home/u/python');
    expect(interpreterMount('/bin/python3')).toBe('/bin/python3');
  });
});
