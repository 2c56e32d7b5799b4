#!/usr/bin/env node
// The server's own system calls per one-shot run: `perf stat` of its syscall tracepoints (every
// thread) over mixed python/bash/node `print(1)`s at concurrency 8, after a warm-up. Counts, unlike
// the server's CPU time, barely move between identical runs, so they show a change to the run path
// that CPU time on this noisy machine cannot. --base adds another build's server, measured in turn
// with this one (--rounds times each). Needs perf and root (tracepoints).
// Usage: npm run build && node bench/server-syscalls.mjs [--base /path/to/other/dist/cli.js] [--n 600] [--rounds 2]
import { spawn } from 'node:child_process';
import { CLI, measure, startServer } from './lib.mjs';
import { mixedOneShots } from './speed-runs.mjs';

const arg = (name) => {
  const at = process.argv.indexOf(name);
  return at === -1 ? undefined : process.argv[at + 1];
};
const N = Number(arg('--n') ?? 600);
const ROUNDS = Number(arg('--rounds') ?? 2);
const BASE = arg('--base');
const CALLS = [
  'openat',
  'close',
  'read',
  'pread64',
  'write',
  'mkdir',
  'rmdir',
  'unlink',
  'statx',
  'getdents64',
];

/** Syscalls per run of one server of `cli`, by name. */
async function perRun(cli) {
  const server = await startServer({}, { cli });
  try {
    const task = mixedOneShots(server);
    await measure(task, { n: 300, concurrency: 8, warmup: 5 });
    const events = CALLS.map((name) => `syscalls:sys_enter_${name}`).join(',');
    const perf = spawn('perf', ['stat', '-x', ',', '-e', events, '-p', String(server.pid)], {
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let said = '';
    perf.stderr.on('data', (chunk) => {
      said += chunk;
    });
    // perf attaches in the background: a line on stderr would come too late to wait for.
    await new Promise((done) => setTimeout(done, 500));
    await measure(task, { n: N, concurrency: 8, warmup: 0 });
    perf.kill('SIGINT');
    await new Promise((done) => perf.once('exit', done));
    const counts = {};
    for (const line of said.trim().split('\n')) {
      const [count, , event] = line.split(',');
      const name = event?.replace('syscalls:sys_enter_', '');
      if (name && CALLS.includes(name)) counts[name] = Number(count) / N;
    }
    if (Object.keys(counts).length !== CALLS.length) throw new Error(`perf stat said: ${said}`);
    return counts;
  } finally {
    await server.close();
  }
}

const builds = [['this', CLI], ...(BASE ? [['base', BASE]] : [])];
console.log(`server syscalls per mixed one-shot, c=8, ${N} runs; ${ROUNDS} round(s)`);
console.log(
  ['build', ...CALLS, 'all'].map((cell, i) => (i === 0 ? cell.padEnd(6) : cell.padStart(11))).join(''),
);
for (let round = 0; round < ROUNDS; round++) {
  for (const [label, cli] of builds) {
    const counts = await perRun(cli);
    const all = CALLS.reduce((sum, name) => sum + counts[name], 0);
    const cells = [...CALLS.map((name) => counts[name]), all].map((value) => value.toFixed(1).padStart(11));
    console.log(label.padEnd(6) + cells.join(''));
  }
}
