#!/usr/bin/env node
// The server's own CPU per run over its life: mixed python/bash/node `print(1)`s at concurrency 8,
// in blocks of --n runs from its first run on, each block followed by a pause that its warm pool's
// refill lands in (counted). V8 compiles the run path lazily and optimizes each function only once
// it has run often enough, so a fresh server pays far more per run than one that has served
// thousands: this prints by how much, each block beside the server's settled cost (the median of
// its last three blocks, measured in the same run). --base adds another build's server; the two alternate block by block,
// so both see the same phases of the machine.
// Usage: npm run build && node bench/warmup.mjs [--base /path/to/other/dist/cli.js] [--n 300] [--blocks 10]
import { CLI, measure, processCpuMs, startServer } from './lib.mjs';
import { mixedOneShots } from './speed-runs.mjs';

const arg = (name) => {
  const at = process.argv.indexOf(name);
  return at === -1 ? undefined : process.argv[at + 1];
};
const N = Number(arg('--n') ?? 300);
const BLOCKS = Number(arg('--blocks') ?? 10);
const BASE = arg('--base');
/** After each block: the warm pool refills (its CPU is the block's). */
const REFILL_MS = 1500;

/** One block of N runs of `task` on `server`, then the pause its pool refills in. */
async function block(server, task) {
  const before = processCpuMs(server.pid);
  const { perSecond } = await measure(task, { n: N, concurrency: 8, warmup: 0 });
  await new Promise((done) => setTimeout(done, REFILL_MS));
  return { ms: (processCpuMs(server.pid) - before) / N, perSecond };
}

/** The median ms/run of the last three blocks. */
function settled(rows) {
  const last = rows
    .slice(-3)
    .map((row) => row.ms)
    .sort((a, b) => a - b);
  return last[Math.floor(last.length / 2)];
}

const builds = [['this', CLI], ...(BASE ? [['base', BASE]] : [])];
const servers = [];
try {
  for (const [label, cli] of builds) {
    const server = await startServer({}, { cli });
    servers.push({ label, server, task: mixedOneShots(server), rows: [] });
  }
  for (let k = 0; k < BLOCKS; k++)
    for (const entry of servers) entry.rows.push(await block(entry.server, entry.task));
} finally {
  await Promise.all(servers.map(({ server }) => server.close()));
}

console.log(`server CPU per mixed one-shot, c=8, blocks of ${N} runs from a fresh server`);
console.log(
  ['runs', ...servers.flatMap(({ label }) => [`${label} ms/run`, 'runs/s', '÷ settled'])]
    .map((cell, i) => (i === 0 ? cell.padEnd(12) : cell.padStart(13)))
    .join(''),
);
for (let k = 0; k < BLOCKS; k++) {
  const cells = servers.flatMap(({ rows }) => [
    rows[k].ms.toFixed(2),
    rows[k].perSecond.toFixed(0),
    (rows[k].ms / settled(rows)).toFixed(2),
  ]);
  console.log(
    [`${k * N + 1}–${(k + 1) * N}`, ...cells]
      .map((cell, i) => (i === 0 ? cell.padEnd(12) : cell.padStart(13)))
      .join(''),
  );
}
