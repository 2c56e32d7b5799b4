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

/** `codexec serve` of this worktree's dist, or of `cli` (another build's dist/cli.js). */
export async function startServer(env = {}, { cli = CLI } = {}) {
  const home = mkdtempSync(join(tmpdir(), 'codexec-bench-'));
  const transport = new StdioClientTransport({
    command: process.execPath,
    // BENCH_NODE_ARGS: node's own flags for the server (e.g. --cpu-prof --cpu-prof-dir=/tmp/prof).
    args: [...(process.env.BENCH_NODE_ARGS?.split(' ').filter(Boolean) ?? []), cli, 'serve'],
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

/** p50, p90, p99 and p99.9 of latencies (p99.9 of fewer than 1,000 samples is near the largest). */
export function percentiles(latencies) {
  const sorted = [...latencies].sort((a, b) => a - b);
  const pick = (q) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
  return { n: sorted.length, p50: pick(0.5), p90: pick(0.9), p99: pick(0.99), p999: pick(0.999) };
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

/** Each live (not zombie) process's parent pid, by pid. */
export function parents() {
  const map = new Map();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (fields[0] !== 'Z') map.set(Number(entry), Number(fields[1]));
    } catch {}
  }
  return map;
}

/** Every live process below `pid`: its children, theirs, and so on. */
export function descendantsOf(pid) {
  const map = parents();
  const found = [];
  for (let queue = [pid]; queue.length > 0; ) {
    const parent = queue.shift();
    for (const [child, ppid] of map) {
      if (ppid === parent) {
        found.push(child);
        queue.push(child);
      }
    }
  }
  return found;
}

// Kernel clock ticks per second of /proc's CPU times (USER_HZ: 100 on Linux, for every architecture).
const TICK_MS = 1000 / 100;

/** CPU time the whole machine has spent busy (all but idle and iowait), in ms since boot. */
export function machineCpuMs() {
  const [, ...fields] = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/);
  // user nice system idle iowait irq softirq steal (guest time is already in user and nice)
  const [user, nice, system, , , irq, softirq, steal = 0] = fields.map(Number);
  return (user + nice + system + irq + softirq + steal) * TICK_MS;
}

/** CPU time (user + system) of one process itself, not of its children, in ms. */
export function processCpuMs(pid) {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) * TICK_MS;
}

export const ms = (value) => (Number.isFinite(value) ? value.toFixed(2) : '-');

/** The floor under codexec's idle RSS: a one-tool server on the MCP SDK (bench/fixtures). */
export const SDK_ONE_TOOL = resolve(import.meta.dirname, 'fixtures/sdk-one-tool.mjs');

/**
 * SDK_ONE_TOOL as plain ESM and as one esbuild bundle (minified whitespace and syntax, `require`
 * defined for the SDK's CommonJS dependencies) in a temporary directory; close() removes it.
 */
export async function sdkOneTool() {
  const { build } = await import('esbuild');
  const dir = mkdtempSync(join(tmpdir(), 'codexec-bench-sdk-'));
  const bundled = join(dir, 'sdk-one-tool.mjs');
  await build({
    entryPoints: [SDK_ONE_TOOL],
    outfile: bundled,
    bundle: true,
    platform: 'node',
    format: 'esm',
    minifyWhitespace: true,
    minifySyntax: true,
    logLevel: 'error',
    banner: {
      js: "import { createRequire as __benchRequire } from 'node:module'; const require = __benchRequire(import.meta.url);",
    },
  });
  return { plain: SDK_ONE_TOOL, bundled, close: () => rmSync(dir, { recursive: true, force: true }) };
}
