// Where a docker-mode container start goes (issue #36): wall time and CPU per container for
// variants of the engine's `run`, beside the floor (`run --rm IMAGE true`) measured in the same
// run. CPU is the cpuacct of the CLI (a cgroup of this bench's) plus the engine's cgroup parent
// (conmon, runc, the container, the cleanup conmon runs): podman with cgroupfs on cgroup v1 (root).
// Usage: node bench/docker-cold.mjs [--n 20] [--image codexec-sandbox]
import { spawn } from 'node:child_process';
import { mkdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import { ms } from './lib.mjs';

const arg = (name, fallback) => {
  const at = process.argv.indexOf(name);
  return at === -1 ? fallback : process.argv[at + 1];
};
const N = Number(arg('--n', '20'));
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

/** Each variant: what one start is (wall measured), and what it leaves to remove (CPU counted). */
const VARIANTS = [
  [
    'floor: run --rm --network none IMAGE true',
    async () => timed([...podman, 'run', '--rm', '--network', 'none', ...NOFILE, IMAGE, 'true']),
  ],
  [
    'ours: run --rm <confinement> IMAGE true',
    async () => timed([...podman, 'run', '--rm', ...OURS, IMAGE, 'true']),
  ],
  [
    'ours, python -c pass',
    async () => timed([...podman, 'run', '--rm', ...OURS, IMAGE, 'python3', '-c', 'pass']),
  ],
  [
    'ours, no --rm (removed after, in one rm)',
    async (names) => {
      const n = name();
      names.push(n);
      return timed([...podman, 'run', '--name', n, ...OURS, IMAGE, 'true']);
    },
  ],
  [
    'ours, run -d (CLI back once started)',
    async (names) => {
      const n = name();
      names.push(n);
      return timed([...podman, 'run', '-d', '--name', n, ...OURS, IMAGE, 'true']);
    },
  ],
  [
    'ours, created ahead: start --attach only',
    async (names) => {
      const n = name();
      names.push(n);
      await timed([...podman, 'create', '--name', n, ...OURS, IMAGE, 'true']);
      return timed([...podman, 'start', '--attach', n]);
    },
  ],
  [
    'podman create alone',
    async (names) => {
      const n = name();
      names.push(n);
      return timed([...podman, 'create', '--name', n, ...OURS, IMAGE, 'true']);
    },
  ],
];

console.log(
  `podman --runtime runc, ${N} sequential starts per variant, ${IMAGE}; CPU: CLI + conmon + runc + container + cleanup`,
);
try {
  await timed([...podman, 'run', '--rm', ...NOFILE, IMAGE, 'true']); // the engine's first start is slow
  for (const [label, once] of VARIANTS) {
    const names = [];
    const walls = [];
    await pause(1500);
    const cpu0 = cpuNow();
    const t0 = performance.now();
    for (let i = 0; i < N; i++) walls.push(await once(names));
    if (names.length > 0) await timed([...podman, 'rm', '--force', '--time', '0', ...names]);
    await pause(1500); // conmon's cleanup of the last ones
    const cpu = (cpuNow() - cpu0) / N;
    const elapsed = performance.now() - t0;
    console.log(
      `${label.padEnd(46)} wall p50 ${ms(p50(walls)).padStart(8)} ms  CPU ${ms(cpu).padStart(7)} ms/start  (${ms(elapsed / 1000)} s)`,
    );
  }
} finally {
  try {
    for (const pid of readFileSync(`${OWN}/tasks`, 'utf8').split('\n').filter(Boolean))
      writeFileSync(`${CPUACCT}/tasks`, pid);
    rmdirSync(OWN);
  } catch {}
}
