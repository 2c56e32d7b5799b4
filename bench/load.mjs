// Load test (not part of npm test): 10,000 one-shot runs at concurrency 8 through one server in
// the default mode with the warm pool. Passes when every run succeeds with the right output, no
// process is left behind after the server exits, and server memory stays flat: the server's
// RssAnon is sampled every 1,000 runs and its least-squares slope (MB per 1,000 runs, after the
// first 2,000, while caches and JIT settle) is printed; the target is under 0.05.
// Usage: node bench/load.mjs [--runs N] [--concurrency C]
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { descendantsOf, measure, ms, parents, processesUnder, rssMb, startServer } from './lib.mjs';

const arg = (name, fallback) => {
  const i = process.argv.indexOf(name);
  return i === -1 ? fallback : Number(process.argv[i + 1]);
};
const runs = arg('--runs', 10_000);
const concurrency = arg('--concurrency', 8);
const languages = ['python', 'node', 'bash'];
const code = {
  python: 'import sys\nprint(sys.argv[0][-3:], 6 * 7)',
  node: 'console.log("mjs", 6 * 7)',
  bash: 'echo sh $((6 * 7))',
};
const expected = { python: '.py 42\n', node: 'mjs 42\n', bash: 'sh 42\n' };

const server = await startServer();
const failures = [];
let done = 0;
let rssAfterWarmup = 0;
const samples = []; // [runs, RssAnon MB]
const stats = await measure(
  async () => {
    const language = languages[done % languages.length];
    const result = await server.call('execute_code', { language, code: code[language] });
    done++;
    if (done === 500) rssAfterWarmup = rssMb(server.pid);
    if (!result?.success || result.stdout !== expected[language]) failures.push({ language, result });
    if (done % 1000 === 0) {
      const anon = rssMb(server.pid, 'RssAnon');
      samples.push([done, anon]);
      console.error(
        `  ${done} runs, ${failures.length} failures, RSS ${ms(rssMb(server.pid))} MB, anon ${ms(anon)} MB`,
      );
    }
  },
  { n: runs, concurrency, warmup: 0 },
);
const rssEnd = rssMb(server.pid);
const home = server.home;
const duringRun = processesUnder(home).length;
// The forker and its launchers run outside the workspace: find them as the server's descendants.
// Each with its start time: pids wrap (pid_max may be 32768), and one may be reused meanwhile.
const helpers = descendantsOf(server.pid).map((pid) => [pid, startTime(pid)]);
await server.client.close(); // the server exits; its home is kept until it has been checked
await sleep(1000);
const survivors = helpers
  .filter(([pid, start]) => alive(pid) && startTime(pid) === start)
  .map(([pid]) => pid);
const leaked = [...new Set([...processesUnder(home), ...survivors])];
for (const pid of leaked) console.error(`  left running: ${pid} ${describe(pid)}`);
// Workspaces of runs that left no files, and run cgroups, must be gone too.
const sandboxDir = join(home, 'sandbox');
const workspaces = existsSync(sandboxDir) ? readdirSync(sandboxDir) : [];
const cgroups = existsSync('/sys/fs/cgroup')
  ? execFileSync('find', ['/sys/fs/cgroup', '-maxdepth', '6', '-name', `codexec-run-${server.pid}-*`], {
      encoding: 'utf8',
    })
      .split('\n')
      .filter(Boolean)
  : [];
console.log(
  `runs: ${runs} at concurrency ${concurrency}; ${stats.perSecond.toFixed(1)} runs/s; p50 ${ms(stats.p50)} ms; p99 ${ms(stats.p99)} ms`,
);
console.log(
  `failures: ${failures.length}; processes after exit: ${leaked.length} (warm pool before exit: ${duringRun}); workspaces left: ${workspaces.length}; cgroups left: ${cgroups.length}`,
);
console.log(`server RSS after 500 runs ${ms(rssAfterWarmup)} MB, at the end ${ms(rssEnd)} MB`);
const settled = samples.filter(([n]) => n > 2000);
console.log(
  settled.length >= 3
    ? `server RssAnon slope after 2,000 runs: ${slope(settled).toFixed(3)} MB per 1,000 runs (${settled.length} samples, ${ms(settled[0][1])} -> ${ms(settled.at(-1)[1])} MB)`
    : 'server RssAnon slope: needs at least 5,000 runs',
);
if (failures.length > 0) console.log(JSON.stringify(failures.slice(0, 3), null, 2));
rmSync(home, { recursive: true, force: true });
process.exitCode =
  failures.length === 0 && leaked.length === 0 && workspaces.length === 0 && cgroups.length === 0 ? 0 : 1;

/** Least-squares slope of [runs, MB] points, in MB per 1,000 runs. */
function slope(points) {
  const n = points.length;
  const mx = points.reduce((sum, [x]) => sum + x, 0) / n;
  const my = points.reduce((sum, [, y]) => sum + y, 0) / n;
  const sxy = points.reduce((sum, [x, y]) => sum + (x - mx) * (y - my), 0);
  const sxx = points.reduce((sum, [x]) => sum + (x - mx) ** 2, 0);
  return (sxy / sxx) * 1000;
}

function alive(pid) {
  return parents().has(pid);
}

function startTime(pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19];
  } catch {
    return undefined;
  }
}

function describe(pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const [state, ppid] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const comm = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
    const cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ').slice(0, 160);
    return `${comm} (state ${state}, parent ${ppid}) ${cmdline}`;
  } catch {
    return '(gone)';
  }
}
