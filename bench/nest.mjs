#!/usr/bin/env node
// What a zygote run's sandbox costs: made by the nest from a template (native/nest.c, what zygotes
// use now) against bwrap around the zygote's placeholder (what they used before, and still use
// where the nest cannot), alternated one sandbox each. Both make a warm python sandbox's tree (the
// system binds, an /etc copy, a drivers' view, /proc, /dev, /tmp, /dev/shm, a workspace in a home
// outside /tmp), say it is complete, and end when their stdin does, as the zygote has them. CPU is
// what each variant's cgroup charged (cpu.stat usage_usec, or cpuacct.usage on cgroup v1): the
// sandbox's processes and the `sh` that puts them there, per sandbox; the kernel's deferred
// teardown of a network namespace (a kworker) is charged to neither. The template is made once
// and not counted.
// Usage: npm run build && node bench/nest.mjs [--n 300]   (root, bubblewrap installed)
import { spawn } from 'node:child_process';
import {
  chmodSync,
  closeSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readFileSync,
  rmdirSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { join, resolve } from 'node:path';

const arg = (name) => {
  const at = process.argv.indexOf(name);
  return at === -1 ? undefined : process.argv[at + 1];
};
const N = Number(arg('--n') ?? 300);
const ROOT = resolve(import.meta.dirname, '..');
const NEST = join(ROOT, 'dist/native/nest');
if (!existsSync(NEST)) throw new Error(`${NEST} is not built: npm run build (with a C compiler)`);

// A home outside /tmp, as ~/.codexec is, with the /etc copy, the drivers' view and a workspace.
const dir = mkdtempSync('/var/tmp/codexec-bench-nest-');
const etc = join(dir, 'etc');
const view = join(dir, 'view');
const sandboxDir = join(dir, 'sandbox');
const workspace = join(sandboxDir, 'exec_1');
for (const path of [etc, view, workspace]) mkdirSync(path, { recursive: true });
writeFileSync(join(etc, 'hosts'), '127.0.0.1 localhost\n');
writeFileSync(join(view, 'warm_python.py'), '');
const DRIVERS = join(ROOT, 'drivers');
// The zygote's own placeholder program (drivers/zygote.py), run from a file as it runs its memfd.
const placeholder = join(dir, 'placeholder');
const made = spawn('/usr/bin/python3', [
  '-c',
  `import sys; sys.path.insert(0, ${JSON.stringify(DRIVERS)}); import zygote; open(${JSON.stringify(placeholder)}, "wb").write(zygote.placeholder_program())`,
]);
await new Promise((done) => made.on('exit', done));
chmodSync(placeholder, 0o555);

const BWRAP = [
  ...['/usr/bin/bwrap', '--unshare-ipc', '--unshare-pid', '--unshare-uts', '--unshare-cgroup-try'],
  ...['--unshare-net', '--cap-drop', 'ALL', '--die-with-parent', '--new-session'],
  ...['--hostname', 'codexec', '--clearenv', '--ro-bind', '/usr', '/usr'],
  ...['--symlink', 'usr/bin', '/bin', '--symlink', 'usr/lib', '/lib', '--symlink', 'usr/lib64', '/lib64'],
  ...['--ro-bind', etc, '/etc', '--proc', '/proc', '--dev', '/dev'],
  ...['--perms', '1777', '--size', '536870912', '--tmpfs', '/tmp'],
  ...['--perms', '1777', '--size', '536870912', '--tmpfs', '/dev/shm'],
  ...['--dir', ROOT, '--ro-bind', view, DRIVERS, '--dir', sandboxDir, '--bind', workspace, workspace],
  ...['--chdir', '/', '/proc/self/fd/3'],
];
const TEMPLATE = [
  ...[NEST, 'template', 'ro-bind', '/usr', '/usr', 'symlink', 'usr/bin', '/bin'],
  ...['symlink', 'usr/lib', '/lib', 'symlink', 'usr/lib64', '/lib64', 'ro-bind', etc, '/etc'],
  ...['dir', '/proc', 'dev', '/dev', 'dir', '/tmp', 'dir', ROOT, 'ro-bind', view, DRIVERS, 'dir', sandboxDir],
];
const RUN = [
  ...[NEST, 'run', 'net', 'proc', '/proc', 'devpts', '/dev/pts'],
  ...['tmpfs', '1777', '536870912', '/tmp', 'tmpfs', '1777', '536870912', '/dev/shm'],
  ...['cover', sandboxDir, 'bind', workspace, workspace],
];

/** Start `argv` (in `group`, if given) with fd 3 as given; resolves once it says "ready". */
function start(argv, fd3, group) {
  const script = group ? 'echo $$ > "$1/cgroup.procs" && shift && exec "$@"' : 'shift; exec "$@"';
  const child = spawn('sh', ['-c', script, 'sh', group ?? '', ...argv], {
    stdio: ['pipe', 'pipe', 'inherit', fd3],
  });
  return new Promise((ready, failed) => {
    child.stdout.once('data', (data) =>
      data.toString() === 'ready\n' ? ready(child) : failed(new Error(`${argv[0]} said ${data}`)),
    );
    child.once('exit', (code) => failed(new Error(`${argv[0]} exited ${code} before it was ready`)));
  });
}

/** The sandbox made, then let go as the zygote lets it go (its stdin ends); resolves at its exit. */
async function sandbox(argv, fd3, group) {
  const child = await start(argv, fd3, group);
  const exited = new Promise((done) => child.once('exit', done));
  child.stdin.end();
  await exited;
}

const V1 = existsSync('/sys/fs/cgroup/cpuacct/cpuacct.usage');
const CGROUP_ROOT = V1 ? '/sys/fs/cgroup/cpuacct' : '/sys/fs/cgroup';
function cgroupCpuMs(group) {
  if (V1) return Number(readFileSync(join(group, 'cpuacct.usage'), 'utf8')) / 1e6;
  return Number(/^usage_usec (\d+)/m.exec(readFileSync(join(group, 'cpu.stat'), 'utf8'))?.[1]) / 1e3;
}

const template = await start(TEMPLATE, 'ignore');
const namespace = openSync(`/proc/${template.pid}/ns/mnt`, 'r');
const script = openSync(placeholder, 'r');
const VARIANTS = { 'nest, from a template': [RUN, namespace], 'bwrap and the placeholder': [BWRAP, script] };
const groups = Object.fromEntries(
  Object.keys(VARIANTS).map((name, i) => [name, join(CGROUP_ROOT, `codexec-bench-nest-${process.pid}-${i}`)]),
);
try {
  for (const group of Object.values(groups)) mkdirSync(group);
  for (let i = 0; i < N; i++)
    for (const [name, [argv, fd3]] of Object.entries(VARIANTS)) await sandbox(argv, fd3, groups[name]);
  const cpu = Object.fromEntries(
    Object.entries(groups).map(([name, group]) => [name, cgroupCpuMs(group) / N]),
  );
  const floor = cpu['bwrap and the placeholder'];
  console.log(`CPU per zygote sandbox, ${N} alternated of each (ms; ratio to bwrap's)`);
  for (const [name, ms] of Object.entries(cpu))
    console.log(`${name.padEnd(28)} ${ms.toFixed(2)}  ${(ms / floor).toFixed(2)}`);
} finally {
  template.stdin.end();
  closeSync(namespace);
  closeSync(script);
  await new Promise((done) => setTimeout(done, 100));
  for (const group of Object.values(groups)) if (existsSync(group)) rmdirSync(group);
  rmSync(dir, { recursive: true, force: true });
}
