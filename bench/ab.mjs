// This build against another (--base its dist/cli.js, e.g. a worktree of the commit before a change),
// alternated call by call over MCP stdio and paced as an agent's calls are: a warm one-shot run
// per language and a session send (python, bash, node; and a python send of 400 ms), p50 / p99 of each and the ratio this ÷ base;
// then throughput: blocks of mixed one-shots at concurrency 8, alternated block by block, runs/s of each.
// --control adds a second server of the base build, alternated with the two: its ratio to base is
// what this machine's noise alone makes of identical builds, the yardstick for this ÷ base.
// Usage: node bench/ab.mjs --base /path/to/other/dist/cli.js [--n 150] [--only send] [--blocks 10] [--control]
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { CLI, ms } from './lib.mjs';

const arg = (name) => {
  const at = process.argv.indexOf(name);
  return at === -1 ? undefined : process.argv[at + 1];
};
if (!arg('--base')) throw new Error('usage: node bench/ab.mjs --base /path/to/dist/cli.js [--n 150]');
const N = Number(arg('--n') ?? 150);
const PACE_MS = 100;
const dir = mkdtempSync(join(tmpdir(), 'codexec-bench-ab-'));

async function start(cli) {
  const home = mkdtempSync(join(dir, 'home-'));
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [cli, 'serve'],
    env: {
      PATH: process.env.PATH,
      HOME: home,
      LANG: 'C.UTF-8',
      CODEXEC_HOME: home,
      CODEXEC_SANDBOX_MODE: 'namespace',
    },
    stderr: 'ignore',
  });
  const client = new Client({ name: 'bench-ab', version: '1.0.0' });
  await client.connect(transport);
  return client;
}

const servers = { base: await start(resolve(arg('--base'))), this: await start(CLI) };
if (process.argv.includes('--control')) servers.control = await start(resolve(arg('--base')));
const NAMES = Object.keys(servers);
/** The order of round `round`: each server first, and last, as often as the others. */
const orderOf = (round) => {
  const turned = NAMES.map((_, i) => NAMES[(i + round) % NAMES.length]);
  return Math.floor(round / NAMES.length) % 2 === 0 ? turned : turned.reverse();
};
const pause = (msecs) => new Promise((done) => setTimeout(done, msecs));
const pick = (sorted, q) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
const CASES = [
  ['python warm', 'execute_code', { language: 'python', code: 'print(1)' }],
  ['node warm', 'execute_code', { language: 'node', code: 'console.log(1)' }],
  ['bash warm', 'execute_code', { language: 'bash', code: 'echo 1' }],
  ['python send', 'send_to_session', { code: 'print(1)' }, 'python'],
  ['bash send', 'send_to_session', { code: 'echo 1' }, 'bash'],
  // Long enough for the look for a read of stdin (src/sessions/stdin-wait.ts) to run twice.
  ['python send 400 ms', 'send_to_session', { code: 'import time\ntime.sleep(0.4)' }, 'python'],
  ['node send', 'send_to_session', { code: 'console.log(1)' }, 'node'],
];
const only = arg('--only');
const sessions = {};
for (const [name, client] of Object.entries(servers)) {
  sessions[name] = {};
  for (const language of ['python', 'bash', 'node']) {
    const started = await client.callTool({ name: 'start_session', arguments: { language } });
    sessions[name][language] = started.structuredContent.session_id;
  }
}
console.log(`this ÷ base, ${N} alternated calls each, ${PACE_MS} ms apart (namespace mode)`);
for (const [label, tool, args, language] of CASES.filter(([label]) => !only || label.includes(only))) {
  const times = Object.fromEntries(NAMES.map((name) => [name, []]));
  for (let round = -10; round < N; round++) {
    for (const name of orderOf(round + 10)) {
      await pause(PACE_MS);
      const call = language ? { ...args, session_id: sessions[name][language] } : args;
      const t0 = performance.now();
      const result = await servers[name].callTool({ name: tool, arguments: call });
      const took = performance.now() - t0;
      if (!result.structuredContent?.success) throw new Error(`${name} ${label}: ${JSON.stringify(result)}`);
      if (round >= 0) times[name].push(took);
    }
  }
  const row = Object.fromEntries(
    Object.entries(times).map(([name, list]) => {
      const sorted = list.sort((a, b) => a - b);
      return [name, { p50: pick(sorted, 0.5), p99: pick(sorted, 0.99) }];
    }),
  );
  const control = row.control ? ` | control ÷ base ${(row.control.p50 / row.base.p50).toFixed(2)}` : '';
  console.log(
    `${label.padEnd(18)} base p50 ${ms(row.base.p50)} p99 ${ms(row.base.p99)} | this p50 ${ms(row.this.p50)} ` +
      `p99 ${ms(row.this.p99)} | ratio p50 ${(row.this.p50 / row.base.p50).toFixed(2)}${control}`,
  );
}

/** Mixed one-shots (python, node, bash in turn), `CONCURRENCY` at a time, `BLOCK` per block. */
const CONCURRENCY = 8;
const BLOCK = 48;
const BLOCKS = Number(arg('--blocks') ?? 10);
async function block(client) {
  let next = 0;
  const worker = async () => {
    while (next < BLOCK) {
      const [, tool, args] = CASES[next++ % 3];
      const result = await client.callTool({ name: tool, arguments: args });
      if (!result.structuredContent?.success) throw new Error(`throughput: ${JSON.stringify(result)}`);
    }
  };
  const t0 = performance.now();
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
  return performance.now() - t0;
}
if (!only || 'throughput'.includes(only)) {
  const spent = Object.fromEntries(NAMES.map((name) => [name, 0]));
  for (let round = -1; round < BLOCKS; round++) {
    for (const name of orderOf(round + 1)) {
      const took = await block(servers[name]);
      if (round >= 0) spent[name] += took;
    }
  }
  const rate = (name) => (BLOCKS * BLOCK * 1000) / spent[name];
  console.log(
    `${'throughput c=8'.padEnd(18)} base ${rate('base').toFixed(1)} runs/s | this ${rate('this').toFixed(1)} runs/s | ` +
      `ratio ${(rate('this') / rate('base')).toFixed(2)}` +
      (servers.control ? ` | control ÷ base ${(rate('control') / rate('base')).toFixed(2)}` : ''),
  );
}
for (const client of Object.values(servers)) await client.close();
rmSync(dir, { recursive: true, force: true });
