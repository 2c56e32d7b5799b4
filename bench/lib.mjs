// Shared helpers for the benchmarks: a real `codexec serve` over stdio with the official MCP
// client, percentiles, and host process checks. Benchmarks print ratios against baselines
// measured in the same run: absolute times on a shared 2-core machine mean little.
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';

export const CLI = resolve(import.meta.dirname, '../dist/cli.js');

export async function startServer(env = {}) {
  const home = mkdtempSync(join(tmpdir(), 'codexec-bench-'));
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [...(process.env.BENCH_NODE_ARGS ? process.env.BENCH_NODE_ARGS.split(' ') : []), CLI, 'serve'],
    env: {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      LANG: process.env.LANG ?? 'C.UTF-8',
      CODEXEC_HOME: home,
      ...env,
    },
    stderr: 'pipe',
  });
  if (process.env.BENCH_STDERR) transport.stderr?.pipe(process.stderr);
  else transport.stderr?.resume();
  const client = new Client({ name: 'codexec-bench', version: '1.0.0' });
  await client.connect(transport);
  return {
    client,
    home,
    pid: transport.pid,
    async call(name, args) {
      const result = await client.callTool({ name, arguments: args }, { timeout: 600_000 });
      return result.structuredContent;
    },
    async close() {
      await client.close();
      rmSync(home, { recursive: true, force: true });
    },
  };
}

/**
 * Run `task` `n` times with `concurrency` workers; latencies in ms and wall time. `gapMs` idles
 * each worker between tasks (not counted), as an agent thinking between calls does.
 */
export async function measure(task, { n, concurrency = 1, warmup = 5, gapMs = 0 }) {
  for (let i = 0; i < warmup; i++) await task();
  const latencies = [];
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < n) {
        next++;
        if (gapMs > 0) await new Promise((resolve) => setTimeout(resolve, gapMs));
        const t = performance.now();
        await task();
        latencies.push(performance.now() - t);
      }
    }),
  );
  const wallMs = performance.now() - started - (gapMs * n) / concurrency;
  return { ...percentiles(latencies), concurrency, perSecond: (n / wallMs) * 1000 };
}

/**
 * Like measure(), for a ratio: each round runs every task once, in turn, so all of them see the
 * same phases of a noisy machine (rows measured minutes apart can differ by a third). `gapMs` idles
 * before each task. Returns the stats of each task, by name.
 */
export async function interleave(tasks, { n, warmup = 5, gapMs = 0 }) {
  const entries = Object.entries(tasks);
  for (let i = 0; i < warmup; i++) for (const [, task] of entries) await task();
  const latencies = Object.fromEntries(entries.map(([name]) => [name, []]));
  for (let i = 0; i < n; i++) {
    for (const [name, task] of entries) {
      if (gapMs > 0) await new Promise((resolve) => setTimeout(resolve, gapMs));
      const t = performance.now();
      await task();
      latencies[name].push(performance.now() - t);
    }
  }
  return Object.fromEntries(entries.map(([name]) => [name, percentiles(latencies[name])]));
}

function percentiles(latencies) {
  const sorted = [...latencies].sort((a, b) => a - b);
  const pick = (q) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
  return { n: sorted.length, p50: pick(0.5), p90: pick(0.9), p99: pick(0.99) };
}

/** Spawn a command and wait for it to exit (stdout discarded). */
export function spawnWait(argv, env = { PATH: '/usr/bin:/bin' }) {
  return new Promise((resolve, reject) => {
    const child = spawn(argv[0], argv.slice(1), { stdio: ['ignore', 'ignore', 'inherit'], env });
    child.once('error', reject);
    child.once('exit', (code) => (code === 0 ? resolve() : reject(new Error(`${argv[0]} exited ${code}`))));
  });
}

export function rssMb(pid, field = 'VmRSS') {
  const match = new RegExp(`${field}:\\s+(\\d+) kB`).exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return Number(match?.[1] ?? Number.NaN) / 1024;
}

/** Live processes started for `home` (a bwrap naming it, or anything whose cwd is inside it). */
export function processesUnder(home) {
  const found = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${entry}/stat`, 'utf8'))) continue;
      const argv = readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0');
      let cwd = '';
      try {
        cwd = readlinkSync(`/proc/${entry}/cwd`);
      } catch {}
      if (argv.some((arg) => arg.startsWith(`${home}/`)) || cwd.startsWith(`${home}/`))
        found.push(Number(entry));
    } catch {}
  }
  return found;
}

export const ms = (value) => (Number.isFinite(value) ? value.toFixed(2) : '-');
