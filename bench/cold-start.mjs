#!/usr/bin/env node
// Cold one-shot latency of `print(1)`: the bare interpreter, bubblewrap alone, and the namespace
// backend (prlimit + cgroup + bwrap + seccomp + the drop to the sandbox user). Same interpreter,
// same run, interleaved.
// "no cgroup" shows what the per-run cgroup costs: moving a process into a cgroup waits for an
// RCU grace period in the kernel, which the backend's pre-started launchers take off the critical
// path. (The engine's warm pool hides all of this on the hot path; this measures a cold
// sandbox: a fresh bwrap, mounts, seccomp, privilege drop and interpreter every time.) Usage:
//   npm run build && node bench/cold-start.mjs [iterations=40]
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../dist/config/index.js';
import { Interpreters } from '../dist/runtimes/index.js';
import { NamespaceBackend } from '../dist/sandbox/index.js';

const iterations = Number(process.argv[2] ?? 40);
const home = mkdtempSync(join(tmpdir(), 'codexec-bench-'));
const config = loadConfig({ ...process.env, CODEXEC_HOME: home, CODEXEC_SANDBOX_MODE: 'namespace' });
const python = await new Interpreters(config.interpreters).get('python');
const backend = new NamespaceBackend();
const noCgroups = new NamespaceBackend({ cgroups: false });
const probe = await backend.probe();
if (!probe.available) {
  console.error(`namespace sandbox unavailable: ${probe.reason}`);
  process.exit(1);
}
const argv = [python, '-c', 'print(1)'];
const env = { PATH: '/usr/bin:/bin', PYTHONDONTWRITEBYTECODE: '1' };
const workspace = mkdtempSync(join(tmpdir(), 'codexec-bench-ws-'));

const system = backend
  .setup()
  .system.flatMap((m) =>
    m.kind === 'symlink'
      ? ['--symlink', m.target, m.path]
      : m.kind === 'dir'
        ? ['--dir', m.path]
        : ['--ro-bind', m.path, m.path],
  );
const bwrapAlone = [
  'bwrap',
  '--unshare-all',
  '--die-with-parent',
  ...system,
  '--proc',
  '/proc',
  '--dev',
  '/dev',
  ...argv,
];

function exec(command, args) {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { env, stdio: ['ignore', 'pipe', 'inherit'] });
    child.stdout.resume();
    child.once('error', reject);
    child.once('exit', (code) => (code === 0 ? resolve() : reject(new Error(`${command} exited ${code}`))));
  });
}

async function sandboxed(using = backend) {
  const proc = using.spawn({
    argv,
    cwd: workspace,
    env,
    writablePaths: [workspace],
    readablePaths: [],
    limits: { ...config.limits, cpuSeconds: 31 },
    network: 'none',
    stdin: 'ignore',
  });
  proc.stdout.resume();
  proc.stderr.resume();
  const exit = await proc.exited;
  await proc.dispose();
  if (exit.code !== 0) throw new Error(`sandboxed run exited ${exit.code}`);
}

const cases = {
  'bare interpreter': () => exec(argv[0], argv.slice(1)),
  'bwrap alone': () => exec(bwrapAlone[0], bwrapAlone.slice(1)),
  'namespace backend': () => sandboxed(backend),
  'namespace, no cgroup': () => sandboxed(noCgroups),
};
const samples = Object.fromEntries(Object.keys(cases).map((name) => [name, []]));
for (const run of Object.values(cases)) await run(); // warm the page cache once
for (let i = 0; i < iterations; i++) {
  for (const [name, run] of Object.entries(cases)) {
    const start = process.hrtime.bigint();
    await run();
    samples[name].push(Number(process.hrtime.bigint() - start) / 1e6);
  }
}

const pct = (values, p) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
};
const bare = pct(samples['bare interpreter'], 50);
console.log(`cold print(1), ${python}, ${iterations} runs each, interleaved`);
console.log(
  `${'case'.padEnd(20)} ${'p50 ms'.padStart(8)} ${'p99 ms'.padStart(8)} ${'x bare'.padStart(7)} ${'+ms'.padStart(7)}`,
);
for (const [name, values] of Object.entries(samples)) {
  const p50 = pct(values, 50);
  console.log(
    `${name.padEnd(20)} ${p50.toFixed(1).padStart(8)} ${pct(values, 99).toFixed(1).padStart(8)} ` +
      `${(p50 / bare).toFixed(2).padStart(7)} ${(p50 - bare).toFixed(1).padStart(7)}`,
  );
}
const ns = pct(samples['namespace backend'], 50);
const bw = pct(samples['bwrap alone'], 50);
console.log(
  `namespace vs bare: ${(ns / bare).toFixed(2)}x (+${(ns - bare).toFixed(1)} ms); vs bwrap alone: ${(ns / bw).toFixed(2)}x (+${(ns - bw).toFixed(1)} ms)`,
);
rmSync(workspace, { recursive: true, force: true });
rmSync(home, { recursive: true, force: true });
