#!/usr/bin/env node
// What bubblewrap's binds cost a sandbox: bwrap runs `/usr/bin/true` in namespace mode's
// namespaces and mounts, alternated between the mounts a warm python sandbox gets now (/etc one
// copy holding ssl and alternatives, the driver files one copy bound at the drivers' directory:
// 4 binds) and before (ssl and alternatives bound from the host, each driver file bound: 8), with
// --floor adding the bare namespaces (no bind but /usr) as the floor. CPU is what each
// variant's cgroup charged (cpuacct.usage, or cpu.stat's usage_usec on cgroup v2): bwrap, its
// sandbox's processes and the `sh` that puts it there, to the nanosecond, per sandbox.
// Namespace mode's /dev, /proc and tmpfs mounts are in every variant; no seccomp, cgroup or uid drop.
// Usage: node bench/binds.mjs [--n 300] [--floor]   (root, bubblewrap installed)
import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';

const arg = (name) => {
  const at = process.argv.indexOf(name);
  return at === -1 ? undefined : process.argv[at + 1];
};
const N = Number(arg('--n') ?? 300);
const DRIVERS = resolve(import.meta.dirname, '../drivers');
const FILES = ['warm_python.py', 'mpl/codexec_figures.py', 'mpl/sitecustomize.py'];

const dir = mkdtempSync(join(tmpdir(), 'codexec-bench-binds-'));
const workspace = join(dir, 'workspace');
const etc = join(dir, 'etc');
const etcBefore = join(dir, 'etc-before'); // with the mount points the binds below need
const view = join(dir, 'view');
mkdirSync(workspace);
mkdirSync(etc);
for (const name of ['alternatives', 'ssl']) mkdirSync(join(etcBefore, name), { recursive: true });
for (const file of FILES) {
  mkdirSync(dirname(join(view, file)), { recursive: true });
  copyFileSync(join(DRIVERS, file), join(view, file));
}

const NAMESPACES = [
  '--unshare-ipc',
  '--unshare-pid',
  '--unshare-uts',
  '--unshare-cgroup-try',
  '--unshare-net',
];
const COMMON = [...NAMESPACES, '--cap-drop', 'ALL', '--die-with-parent', '--new-session', '--clearenv'];
const ROOT = [
  '--ro-bind',
  '/usr',
  '/usr',
  '--symlink',
  'usr/bin',
  '/bin',
  '--symlink',
  'usr/lib',
  '/lib',
  '--symlink',
  'usr/lib64',
  '/lib64',
];
const SYSTEM = ['--proc', '/proc', '--dev', '/dev', '--tmpfs', '/tmp', '--tmpfs', '/dev/shm'];
const RUN = ['--bind', workspace, workspace, '--chdir', workspace, '/usr/bin/true'];
const eachFile = FILES.flatMap((file) => {
  const path = join(DRIVERS, file);
  return ['--dir', dirname(path), '--ro-bind', path, path];
});
const VARIANTS = {
  'now: 4 binds': [...ROOT, '--ro-bind', etc, '/etc', ...SYSTEM, '--ro-bind', view, DRIVERS, ...RUN],
  'before: 8 binds': [
    ...ROOT,
    '--ro-bind',
    etcBefore,
    '/etc',
    '--ro-bind',
    '/etc/alternatives',
    '/etc/alternatives',
    '--ro-bind',
    '/etc/ssl',
    '/etc/ssl',
    ...SYSTEM,
    ...eachFile,
    ...RUN,
  ],
  ...(process.argv.includes('--floor') && { 'floor: /usr and the run': [...ROOT, ...SYSTEM, ...RUN] }),
};

/** A cgroup per variant that counts CPU: cgroup v1's cpuacct controller, or v2's unified tree. */
const V1 = existsSync('/sys/fs/cgroup/cpuacct/cpuacct.usage');
const CGROUP_ROOT = V1 ? '/sys/fs/cgroup/cpuacct' : '/sys/fs/cgroup';
const groups = Object.fromEntries(
  Object.keys(VARIANTS).map((name, i) => [
    name,
    join(CGROUP_ROOT, `codexec-bench-binds-${process.pid}-${i}`),
  ]),
);
/** CPU (ms) the cgroup has charged so far. */
function cgroupCpuMs(group) {
  if (V1) return Number(readFileSync(join(group, 'cpuacct.usage'), 'utf8')) / 1e6;
  return Number(/^usage_usec (\d+)/m.exec(readFileSync(join(group, 'cpu.stat'), 'utf8'))?.[1]) / 1e3;
}

try {
  for (const group of Object.values(groups)) mkdirSync(group);
  for (let i = 0; i < N; i++) {
    for (const [name, mounts] of Object.entries(VARIANTS)) {
      const script = 'echo $$ > "$1/cgroup.procs" && shift && exec bwrap "$@"';
      const result = spawnSync('sh', ['-c', script, 'sh', groups[name], ...COMMON, ...mounts], {
        stdio: ['ignore', 'ignore', 'pipe'],
      });
      if (result.status !== 0) throw new Error(`bwrap (${name}) exited ${result.status}: ${result.stderr}`);
    }
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
const cpu = Object.fromEntries(Object.entries(groups).map(([name, group]) => [name, cgroupCpuMs(group)]));
for (const group of Object.values(groups)) rmdirSync(group);
const base = cpu['before: 8 binds'] / N;
console.log(`bwrap CPU per sandbox, ${N} alternated runs of each (ms; ratio to before)`);
for (const [name, total] of Object.entries(cpu))
  console.log(`${name.padEnd(26)} ${(total / N).toFixed(2)}  ${(total / N / base).toFixed(2)}`);
