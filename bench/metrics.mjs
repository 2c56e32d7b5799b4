// Issue #34's metrics and traces, what they cost. (1) Idle RSS of `serve --http` (and of stdio)
// built from the commit before them (the baseline, built here from `git archive` into a temp dir)
// against this build, and this build with OTEL_EXPORTER_OTLP_ENDPOINT set: servers started in
// turn, ROUNDS times, each measured 1.5 s after it listens. (2) The per-run cost of the hooks, in
// process: the gate's metrics.runEnded (a label-series lookup, a count, a histogram observe)
// and phase() with tracing off, each against an empty call measured in the same loop.
// Run `npm run build` first. Usage: node bench/metrics.mjs [--quick] [--base <commit>]
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { CLI, ms, rssMb } from './lib.mjs';

const quick = process.argv.includes('--quick');
const ROUNDS = quick ? 2 : 4;
const CALLS = quick ? 200_000 : 1_000_000;
const ROOT = resolve(import.meta.dirname, '..');
const TOKEN = 'bench-token-0123456789abcdef';

/** The commit before the metrics: the parent of the one that added src/metrics/index.ts. */
function baseCommit() {
  const at = process.argv.indexOf('--base');
  if (at > 0) return process.argv[at + 1];
  const added = execFileSync('git', ['log', '--diff-filter=A', '--format=%H', '--', 'src/metrics/index.ts'], {
    cwd: ROOT,
    encoding: 'utf8',
  });
  return `${added.trim().split('\n').pop()}^`;
}

function buildBaseline(commit) {
  const dir = mkdtempSync(join(tmpdir(), 'codexec-base-'));
  execFileSync('sh', ['-c', `git archive ${commit} | tar -x -C ${dir}`], { cwd: ROOT });
  symlinkSync(join(ROOT, 'node_modules'), join(dir, 'node_modules'));
  execFileSync(
    process.execPath,
    [join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.build.json'],
    {
      cwd: dir,
    },
  );
  return { dir, cli: join(dir, 'dist/cli.js') };
}

/** Start a server, wait until it is up and settled, read its RSS, stop it. */
async function idleRss(cli, args, env = {}) {
  const home = mkdtempSync(join(tmpdir(), 'codexec-bench-'));
  const child = spawn(process.execPath, [cli, 'serve', ...args], {
    env: {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      CODEXEC_HOME: home,
      CODEXEC_HTTP_TOKEN: TOKEN,
      ...env,
    },
    stdio: ['pipe', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (chunk) => {
    stderr += chunk;
  });
  // stdio says nothing when it is up: give both the same settle time after start.
  if (args.includes('--http')) {
    await new Promise((done, fail) => {
      const check = setInterval(() => {
        if (/listening on/.test(stderr)) done(clearInterval(check));
        if (child.exitCode !== null) fail(new Error(`server exited: ${stderr}`));
      }, 20);
    });
  }
  await new Promise((done) => setTimeout(done, 1500));
  const rss = rssMb(child.pid);
  child.kill('SIGTERM');
  await new Promise((done) => child.once('exit', done));
  rmSync(home, { recursive: true, force: true });
  return rss;
}

const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];

async function rssRows(baseCli) {
  const otel = { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:9' };
  const variants = {
    'http, baseline': [baseCli, ['--http', '--port', '0']],
    'http, metrics': [CLI, ['--http', '--port', '0']],
    'http, metrics + OTel set': [CLI, ['--http', '--port', '0'], otel],
    'stdio, baseline': [baseCli, []],
    'stdio, this build': [CLI, []],
    'stdio, OTel set': [CLI, [], otel],
  };
  const samples = Object.fromEntries(Object.keys(variants).map((name) => [name, []]));
  for (let round = 0; round < ROUNDS; round++) {
    for (const [name, [cli, args, env]] of Object.entries(variants))
      samples[name].push(await idleRss(cli, args, env));
  }
  console.log(`idle RSS, MB (median of ${ROUNDS}, started in turn)`);
  for (const [name, values] of Object.entries(samples)) {
    const base = median(samples[name.startsWith('http') ? 'http, baseline' : 'stdio, baseline']);
    console.log(
      `  ${name.padEnd(26)} ${ms(median(values))}  x${(median(values) / base).toFixed(3)}  [${values.map(ms).join(' ')}]`,
    );
  }
}

/** ns per call of each task, interleaved in slices so both see the same machine. */
function perCall(tasks) {
  const names = Object.keys(tasks);
  const total = Object.fromEntries(names.map((name) => [name, 0]));
  const SLICE = 10_000;
  for (let done = 0; done < CALLS; done += SLICE) {
    for (const name of names) {
      const task = tasks[name];
      const started = process.hrtime.bigint();
      for (let i = 0; i < SLICE; i++) task(i);
      total[name] += Number(process.hrtime.bigint() - started);
    }
  }
  return Object.fromEntries(names.map((name) => [name, total[name] / CALLS]));
}

async function hookRows() {
  const { loadMetrics, NO_METRICS } = await import(join(ROOT, 'dist/metrics/index.js'));
  const { phase } = await import(join(ROOT, 'dist/traces/index.js'));
  const metrics = await loadMetrics();
  const results = ['ok', 'error', 'timeout'].map((kind) => ({
    success: kind === 'ok',
    execution_id: 'exec_0123456789ab',
    exit_code: kind === 'timeout' ? null : kind === 'ok' ? 0 : 1,
    timed_out: kind === 'timeout',
    cancelled: false,
    duration_ms: 42,
    sandbox_mode: 'namespace',
    warm: true,
  }));
  const languages = ['python', 'node', 'bash'];
  const ns = perCall({
    'empty call (NO_METRICS)': (i) =>
      NO_METRICS.runEnded('execute_code', languages[i % 3], results[i % 3], 42),
    'metrics.runEnded': (i) => metrics.runEnded('execute_code', languages[i % 3], results[i % 3], 42),
    'phase() + end, tracing off': () => phase('run')?.(),
  });
  const base = ns['empty call (NO_METRICS)'];
  console.log(`\nper-run hook cost, ns per call (${CALLS} calls, interleaved)`);
  for (const [name, value] of Object.entries(ns))
    console.log(`  ${name.padEnd(28)} ${value.toFixed(0).padStart(6)}  x${(value / base).toFixed(1)}`);
  console.log(
    `  a run costs three phase() calls and one runEnded: ~${((ns['metrics.runEnded'] + 3 * ns['phase() + end, tracing off']) / 1000).toFixed(2)} µs`,
  );
}

const commit = baseCommit();
console.log(
  `baseline: ${execFileSync('git', ['log', '-1', '--format=%h %s', commit], { cwd: ROOT, encoding: 'utf8' }).trim().slice(0, 90)}`,
);
const base = buildBaseline(commit);
try {
  await rssRows(base.cli);
} finally {
  rmSync(base.dir, { recursive: true, force: true });
}
await hookRows();
