// Where a docker-mode container start goes: wall time and CPU per container for
// variants of the engine's `run`, beside the floor (`run --rm IMAGE true`) measured in the same
// run. CPU is the cpuacct of the CLI (a cgroup of this bench's) plus the engine's cgroup parent
// (conmon, runc, the container, the cleanup conmon runs): podman with cgroupfs on cgroup v1 (root).
// Usage: node bench/docker-cold.mjs [--n 15] [--image codexec-sandbox]
import { spawn } from 'node:child_process';
import { mkdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import { ms } from './lib.mjs';

const arg = (name, fallback) => {
  const at = process.argv.indexOf(name);
  return at === -1 ? fallback : process.argv[at + 1];
};
const N = Number(arg('--n', '15'));
const IMAGE = arg('--image', 'codexec-sandbox');
const CPUACCT = '/sys/fs/cgroup/cpuacct';
const OWN = `${CPUACCT}/codexec-bench-cold-${process.pid}`;
const ENGINE_PARENT = `${CPUACCT}/libpod_parent`;
mkdirSync(OWN);
const usage = (dir) => {
  try {
    return Number(readFileSync(`${dir}/cpuacct.usage`, 'utf8')) / 1e6;
  } catch {
    return 0;
  }
};
const cpuNow = () => usage(OWN) + usage(ENGINE_PARENT);

/** Run argv in this bench's cgroup; resolves with its wall time (ms) once it exits 0. */
function timed(argv) {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const child = spawn('sh', ['-c', `echo $$ > ${OWN}/tasks && exec "$@"`, 'sh', ...argv], {
      stdio: ['ignore', 'ignore', 'inherit'],
    });
    child.once('error', reject);
    child.once('exit', (code) =>
      code === 0 ? resolve(performance.now() - t0) : reject(new Error(`${argv.join(' ')} exited ${code}`)),
    );
  });
}
const pause = (msecs) => new Promise((done) => setTimeout(done, msecs));
const p50 = (list) => [...list].sort((a, b) => a - b)[Math.floor(list.length / 2)];

const podman = ['podman', '--runtime', 'runc'];
// runc refuses the engine's default nofile and nproc where they exceed it exceeds the host's hard limit.
const NOFILE = ['--ulimit', 'nofile=1024:1024', '--ulimit', 'nproc=4096:4096'];
// Our confinement (src/sandbox/container/args.ts), without the per-run volumes and env.
const OURS = [
  '--init',
  '--network',
  'none',
  '--memory',
  '512m',
  '--memory-swap',
  '512m',
  '--cpus',
  '1',
  '--pids-limit',
  '256',
  '--ulimit',
  'nproc=4096:4096',
  '--read-only',
  '--tmpfs',
  '/tmp:rw,size=100m,mode=1777',
  '--cap-drop',
  'ALL',
  '--security-opt',
  'no-new-privileges',
  '--user',
  '65534:65534',
  '--ulimit',
  'nofile=1024:1024',
  '--ulimit',
  'core=0',
  '--log-driver',
  'none',
];
let count = 0;
const name = () => `codexec-bench-cold-${process.pid}-${count++}`;

/**
 * Each variant: one start, its wall time measured (what a run would wait), and what it leaves
 * removed after (its CPU counted, not its wall time).
 */
const run =
  (...options) =>
  async () => ({ wall: await timed([...podman, 'run', ...options]) });
const named = (make) => async () => {
  const n = name();
  const wall = await make(n);
  await timed([...podman, 'rm', '--force', '--time', '0', n]);
  return { wall };
};
const VARIANTS = [
  ['floor: run --rm --network none IMAGE true', run('--rm', '--network', 'none', ...NOFILE, IMAGE, 'true')],
  ['ours: run --rm <confinement> IMAGE true', run('--rm', ...OURS, IMAGE, 'true')],
  ['ours + --pull never', run('--rm', '--pull', 'never', ...OURS, IMAGE, 'true')],
  ['ours without --init', run('--rm', ...OURS.filter((o) => o !== '--init'), IMAGE, 'true')],
  ['ours, python3 -c pass', run('--rm', ...OURS, IMAGE, 'python3', '-c', 'pass')],
  [
    "ours, no --rm, then rm (a warm run's way)",
    named((n) => timed([...podman, 'run', '--name', n, ...OURS, IMAGE, 'true'])),
  ],
  [
    'ours, created ahead: start --attach (wall)',
    named(async (n) => {
      await timed([...podman, 'create', '--name', n, ...OURS, IMAGE, 'true']);
      return timed([...podman, 'start', '--attach', n]);
    }),
  ],
];
/** After each start: the engine's cleanup (conmon's exit command) lands within this. */
const SETTLE_MS = 400;

console.log(
  `podman --runtime runc, ${N} rounds, each variant once per round; p50 of wall and of CPU per start ` +
    '(CLI + conmon + runc + container + cleanup, within ' +
    SETTLE_MS +
    ' ms after it)',
);
try {
  await timed([...podman, 'run', '--rm', ...NOFILE, IMAGE, 'true']); // the engine's first start is slow
  const walls = VARIANTS.map(() => []);
  const cpus = VARIANTS.map(() => []);
  for (let round = 0; round < N; round++) {
    for (const [index, [, once]] of VARIANTS.entries()) {
      const cpu0 = cpuNow();
      const { wall } = await once();
      await pause(SETTLE_MS);
      walls[index].push(wall);
      cpus[index].push(cpuNow() - cpu0);
    }
  }
  for (const [index, [label]] of VARIANTS.entries()) {
    console.log(
      `${label.padEnd(46)} wall p50 ${ms(p50(walls[index])).padStart(8)} ms  CPU p50 ${ms(p50(cpus[index])).padStart(7)} ms`,
    );
  }
} finally {
  try {
    for (const pid of readFileSync(`${OWN}/tasks`, 'utf8').split('\n').filter(Boolean))
      writeFileSync(`${CPUACCT}/tasks`, pid);
    rmdirSync(OWN);
  } catch {}
}
