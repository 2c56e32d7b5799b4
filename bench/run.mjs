// The execution benchmark (`npm run bench`): latency of one-shot runs over MCP stdio for each
// sandbox configuration against the bare interpreter (the floor) and bubblewrap alone, measured
// in the same run; throughput at concurrency 1/2/8; session sends; server memory.
// Usage: node bench/run.mjs [--quick] [--json FILE]
import { spawnSync } from 'node:child_process';
import { existsSync, lstatSync, mkdirSync, readlinkSync, writeFileSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import { dirname } from 'node:path';
import { interleave, measure, ms, rssMb, spawnWait, startServer } from './lib.mjs';
import { sandboxRuntime } from './peers/sandbox-runtime.mjs';

const quick = process.argv.includes('--quick');
const jsonFlag = process.argv.indexOf('--json');
const jsonOut = jsonFlag === -1 ? 'bench/results/latest.json' : process.argv[jsonFlag + 1];
if (!jsonOut || jsonOut.startsWith('-')) throw new Error('--json needs a file name');
const N = quick ? 30 : 150;
const PACE_MS = 100;

const INTERPRETERS = { python: '/usr/bin/python3', node: process.execPath, bash: '/bin/bash' };
const PRINT1 = { python: 'print(1)', node: 'console.log(1)', bash: 'echo 1' };
const FLAG = { python: '-c', node: '-e', bash: '-c' };
// 50 ms of busy CPU, then print(1): a run whose own work outweighs any start-up cost.
const COMPUTE_50MS = {
  python: 'import time\nt = time.perf_counter()\nwhile time.perf_counter() - t < 0.05: pass\nprint(1)',
  node: 'const t = performance.now();\nwhile (performance.now() - t < 50);\nconsole.log(1)',
  bash: 's=${EPOCHREALTIME/./}\nwhile (( ${EPOCHREALTIME/./} - s < 50000 )); do :; done\necho 1',
};
const CONCURRENCY = [1, 2, 8];

function bwrapArgs(argv) {
  const args = [
    'bwrap',
    '--unshare-all',
    '--die-with-parent',
    '--new-session',
    '--clearenv',
    '--setenv',
    'PATH',
    '/usr/bin:/bin',
  ];
  for (const dir of ['/bin', '/lib', '/lib64', '/sbin', '/usr']) {
    if (!existsSync(dir)) continue;
    const stat = lstatSync(dir);
    if (stat.isSymbolicLink()) args.push('--symlink', readlinkSync(dir), dir);
    else args.push('--ro-bind', dir, dir);
  }
  args.push('--ro-bind-try', '/etc/ssl', '/etc/ssl', '--proc', '/proc', '--dev', '/dev', '--tmpfs', '/tmp');
  return [...args, ...argv];
}

// Sandbox mode docker, where an engine has the image (`codexec image build`): podman here.
const ENGINE = ['podman', 'docker'].find(
  (engine) => spawnSync(engine, ['image', 'inspect', 'codexec-sandbox'], { stdio: 'ignore' }).status === 0,
);
// gVisor beside the engine's default runtime, where runsc is installed and the engine knows it
// (podman takes it from PATH; a docker daemon must list it).
const RUNSC =
  ENGINE &&
  spawnSync('sh', ['-c', 'command -v runsc'], { stdio: 'ignore' }).status === 0 &&
  (ENGINE === 'podman' ||
    spawnSync('docker', ['info', '--format', '{{json .Runtimes}}'], { encoding: 'utf8' }).stdout.includes(
      '"runsc"',
    ));
const docker = (kind, runtime) => ({
  name: `codexec docker${runtime ? '+runsc' : ''} ${kind}`,
  light: true,
  env: {
    CODEXEC_SANDBOX_MODE: 'docker',
    CODEXEC_POOL_SIZE: kind === 'cold' ? '0' : '2',
    ...(runtime && { CODEXEC_DOCKER_RUNTIME: runtime }),
  },
});
const CONFIGS = [
  { name: 'codexec subprocess cold', env: { CODEXEC_SANDBOX_MODE: 'subprocess', CODEXEC_POOL_SIZE: '0' } },
  { name: 'codexec subprocess warm', env: { CODEXEC_SANDBOX_MODE: 'subprocess', CODEXEC_POOL_SIZE: '2' } },
  { name: 'codexec namespace cold', env: { CODEXEC_SANDBOX_MODE: 'namespace', CODEXEC_POOL_SIZE: '0' } },
  { name: 'codexec namespace warm', env: { CODEXEC_SANDBOX_MODE: 'namespace', CODEXEC_POOL_SIZE: '2' } },
  // No namespace: Landlock + seccomp + rlimits + cgroups (our confine launcher, a zygote's fork).
  { name: 'codexec landlock cold', env: { CODEXEC_SANDBOX_MODE: 'landlock', CODEXEC_POOL_SIZE: '0' } },
  { name: 'codexec landlock warm', env: { CODEXEC_SANDBOX_MODE: 'landlock', CODEXEC_POOL_SIZE: '2' } },
  // Containers: latency and sessions only (a container start costs ~0.2 s of CPU: the
  // throughput and compute loops would take minutes and say nothing new).
  ...(ENGINE ? [docker('cold'), docker('warm')] : []),
  ...(RUNSC ? [docker('cold', 'runsc'), docker('warm', 'runsc')] : []),
];
/** The engine's options for a runtime: podman's before `run` (runsc's own network too), docker's after. */
const runtimeOptions = (runtime) => {
  if (ENGINE === 'docker') return { before: [], after: runtime ? ['--runtime', runtime] : [] };
  return {
    before: runtime ? ['--runtime', runtime, '--runtime-flag', 'network=none'] : ['--runtime', 'runc'],
    after: [],
  };
};
/** A container started by the engine's CLI alone (the seed's way: `docker run` per call). */
const engineRun = (argv, runtime) =>
  spawnWait([
    ENGINE,
    ...runtimeOptions(runtime).before,
    'run',
    ...runtimeOptions(runtime).after,
    '--rm',
    '--network',
    'none',
    '--ulimit',
    'nofile=1024:1024',
    '--ulimit',
    'nproc=4096:4096',
    'codexec-sandbox',
    ...argv,
  ]);

const results = {
  machine: { cpus: cpus().length, model: cpus()[0]?.model, memGb: Math.round(totalmem() / 2 ** 30) },
  rows: [],
  throughput: [],
  paced: [],
  interleaved: [],
  runtimes: [],
  sessions: [],
  mcp: {},
  memory: {},
};
const row = (scenario, language, stats, floor) => {
  const entry = { scenario, language, ...stats, ratio: floor ? stats.p50 / floor : 1 };
  results.rows.push(entry);
  console.error(
    `  ${scenario.padEnd(28)} ${language.padEnd(7)} p50 ${ms(stats.p50).padStart(8)} ms  p99 ${ms(stats.p99).padStart(8)} ms  x${entry.ratio.toFixed(2)}`,
  );
  return entry;
};

const compare = (comparison, language, { base, codexec }) => {
  const entry = { comparison, language, base, codexec, ratio: codexec.p50 / base.p50 };
  results.interleaved.push(entry);
  console.error(
    `  ${comparison.padEnd(44)} ${language.padEnd(7)} ${ms(codexec.p50)} / ${ms(base.p50)} ms  x${entry.ratio.toFixed(2)}`,
  );
};

/** Runs per second of `task` at each concurrency; the ratio is to the bare interpreter's. */
async function throughput(scenario, language, task) {
  for (const concurrency of CONCURRENCY) {
    const stats = await measure(task, { n: N, concurrency });
    const base = results.throughput.find(
      (t) => t.scenario === 'bare interpreter' && t.language === language && t.concurrency === concurrency,
    );
    const ratio = base ? stats.perSecond / base.perSecond : 1;
    results.throughput.push({ scenario, language, ...stats, ratio });
    console.error(
      `  ${scenario.padEnd(28)} ${language.padEnd(7)} c=${concurrency}  ${stats.perSecond.toFixed(1)} runs/s  p50 ${ms(stats.p50)} ms  x${ratio.toFixed(2)}`,
    );
  }
}

// Floors: the bare interpreter and bubblewrap alone, with the same code, one at a time and at each
// concurrency.
const floor = {};
for (const language of Object.keys(INTERPRETERS)) {
  const argv = [INTERPRETERS[language], FLAG[language], PRINT1[language]];
  floor[language] = row('bare interpreter', language, await measure(() => spawnWait(argv), { n: N }), 0).p50;
  row('bwrap alone', language, await measure(() => spawnWait(bwrapArgs(argv)), { n: N }), floor[language]);
  if (ENGINE) {
    const runs = { n: Math.ceil(N / 3) };
    row(`${ENGINE} run alone`, language, await measure(() => engineRun(argv), runs), floor[language]);
    if (RUNSC)
      row(
        `${ENGINE} run alone (runsc)`,
        language,
        await measure(() => engineRun(argv, 'runsc'), runs),
        floor[language],
      );
  }
  await throughput('bare interpreter', language, () => spawnWait(argv));
  await throughput('bwrap alone', language, () => spawnWait(bwrapArgs(argv)));
}
// Peers, when installed (npm run bench:peers): the same command through Anthropic's
// sandbox-runtime, used as a library (wrap + spawn, no MCP in between).
const srt = await sandboxRuntime();
if (srt) {
  for (const language of Object.keys(INTERPRETERS)) {
    const argv = [INTERPRETERS[language], FLAG[language], PRINT1[language]];
    row('peer: sandbox-runtime', language, await measure(() => srt.run(argv), { n: N }), floor[language]);
  }
  await srt.reset();
}

const computeFloor = {};
for (const language of Object.keys(INTERPRETERS)) {
  const argv = [INTERPRETERS[language], FLAG[language], COMPUTE_50MS[language]];
  computeFloor[language] = row(
    'bare interpreter 50ms',
    language,
    await measure(() => spawnWait(argv), { n: Math.ceil(N / 3) }),
    0,
  ).p50;
}

for (const config of CONFIGS) {
  const server = await startServer(config.env);
  if (config.name.endsWith('warm')) results.memory.idleRssMb ??= rssMb(server.pid);
  try {
    for (const language of Object.keys(INTERPRETERS)) {
      const task = () => server.call('execute_code', { language, code: PRINT1[language] });
      row(config.name, language, await measure(task, { n: N }), floor[language]);
    }
    // As an agent calls: one request at a time with a pause between them, so a warm pool has
    // refilled. Back-to-back runs (above) also pay for the previous run's refill on 2 cores.
    for (const language of Object.keys(INTERPRETERS)) {
      const task = () => server.call('execute_code', { language, code: PRINT1[language] });
      const stats = await measure(task, { n: Math.ceil(N / 2), gapMs: PACE_MS });
      results.paced.push({ scenario: config.name, language, ...stats });
      console.error(
        `  ${config.name.padEnd(28)} ${language.padEnd(7)} paced p50 ${ms(stats.p50).padStart(8)} ms  p99 ${ms(stats.p99).padStart(8)} ms`,
      );
    }
    if (config.name === 'codexec namespace cold') {
      // The ratio the cold target is about, with both sides alternated call by call.
      for (const language of Object.keys(INTERPRETERS)) {
        const argv = [INTERPRETERS[language], FLAG[language], PRINT1[language]];
        const pair = await interleave(
          {
            base: () => spawnWait(bwrapArgs(argv)),
            codexec: () => server.call('execute_code', { language, code: PRINT1[language] }),
          },
          { n: N },
        );
        compare('namespace cold ÷ bwrap alone', language, pair);
      }
    }
    if (config.name === 'codexec namespace warm') {
      // A warm run against its floor (a session send of the same language: code to a running
      // sandboxed interpreter, plus MCP), alternated call by call and paced: back to back, each
      // send would pay for the refill the run before it started. Issue #17's target: ≤ 1.5, in
      // every language (TypeScript: transpiled by the server on both sides, run by warm Node).
      const SEND = {
        python: ['x = 0', 'x += 1'],
        node: ['var x = 0', 'x += 1'],
        typescript: ['var x: number = 0', 'x += 1'],
        bash: ['x=0', 'x=$((x + 1))'],
      };
      for (const language of Object.keys(SEND)) {
        const { session_id } = await server.call('start_session', { language });
        await server.call('send_to_session', { session_id, code: SEND[language][0] });
        const code = language === 'typescript' ? 'const n: number = 1\nconsole.log(n)' : PRINT1[language];
        const tasks = {
          base: () => server.call('send_to_session', { session_id, code: SEND[language][1] }),
          codexec: () => server.call('execute_code', { language, code }),
        };
        const paced = await interleave(tasks, { n: Math.ceil(N / 2), gapMs: PACE_MS });
        compare('namespace warm ÷ session send, paced', language, paced);
        await server.call('close_session', { session_id });
      }
    }
    results.mcp.pingP50 ??= (await measure(() => server.client.ping(), { n: N })).p50;
    for (const language of config.light ? [] : Object.keys(INTERPRETERS)) {
      const compute = () => server.call('execute_code', { language, code: COMPUTE_50MS[language] });
      row(
        `${config.name} 50ms`,
        language,
        await measure(compute, { n: Math.ceil(N / 3) }),
        computeFloor[language],
      );
    }
    for (const language of config.light ? [] : Object.keys(INTERPRETERS))
      await throughput(config.name, language, () =>
        server.call('execute_code', { language, code: PRINT1[language] }),
      );
    if (config.name === 'codexec namespace warm') results.memory.loadPeakRssMb = rssMb(server.pid, 'VmHWM');
    const { tools } = await server.client.listTools();
    if (tools.some((tool) => tool.name === 'send_to_session')) {
      for (const language of ['python', 'node']) {
        const session = await server.call('start_session', { language });
        await server.call('send_to_session', {
          session_id: session.session_id,
          code: language === 'python' ? 'x = 0' : 'let x = 0',
        });
        const send = () => server.call('send_to_session', { session_id: session.session_id, code: 'x += 1' });
        const stats = await measure(send, { n: N });
        // Paced as the paced runs are: an idle machine between calls wakes slower than a busy one.
        const paced = await measure(send, { n: Math.ceil(N / 2), gapMs: PACE_MS });
        results.sessions.push({ scenario: config.name, language, ...stats, paced });
        console.error(
          `  ${config.name.padEnd(28)} session ${language} x += 1  p50 ${ms(stats.p50)} ms  p99 ${ms(stats.p99)} ms  paced p50 ${ms(paced.p50)} ms`,
        );
        await server.call('close_session', { session_id: session.session_id });
      }
    }
  } finally {
    await server.close();
  }
}

// gVisor's cost: each docker row under runsc against the same row under the default runtime.
const dockerRows = [
  ...results.rows.map((r) => ({ ...r, how: 'back to back' })),
  ...results.paced.map((r) => ({ ...r, how: 'paced' })),
];
for (const how of ['back to back', 'paced']) {
  for (const kind of ['cold', 'warm']) {
    for (const language of Object.keys(INTERPRETERS)) {
      const find = (scenario) =>
        dockerRows.find((r) => r.how === how && r.scenario === scenario && r.language === language);
      const [runc, runsc] = [find(`codexec docker ${kind}`), find(`codexec docker+runsc ${kind}`)];
      if (!runc || !runsc) continue;
      const entry = { kind, how, language, runc: runc.p50, runsc: runsc.p50, ratio: runsc.p50 / runc.p50 };
      results.runtimes.push(entry);
      console.error(
        `  docker ${kind} ${how}: runsc ÷ default runtime ${language.padEnd(7)} ${ms(entry.runsc)} / ${ms(entry.runc)} ms  x${entry.ratio.toFixed(2)}`,
      );
    }
  }
}

// Peer for session sends: a Jupyter kernel (ipykernel, no sandbox) driven over ZMQ.
const jupyter = spawnSync('/usr/bin/python3', ['bench/peers/jupyter_send.py', String(N)], {
  encoding: 'utf8',
  timeout: 300_000,
});
try {
  const stats = JSON.parse(jupyter.stdout);
  results.sessions.push({ scenario: 'peer: Jupyter kernel (no sandbox)', language: 'python', ...stats });
  console.error(
    `  peer: Jupyter kernel session python x += 1  p50 ${ms(stats.p50)} ms  p99 ${ms(stats.p99)} ms`,
  );
} catch {
  console.error(
    '  peer: Jupyter kernel: not measured (apt-get install python3-ipykernel python3-jupyter-client)',
  );
}

// The table, as docs/performance.md shows it.
const lines = [];
lines.push(
  `Machine: ${results.machine.cpus} cores (${results.machine.model}), ${results.machine.memGb} GiB; ${N} runs per cell; ratios are p50 against the bare interpreter measured in the same run.`,
  '',
);
lines.push(
  '| scenario | python p50 / p99 (ms) | ×floor | node p50 / p99 (ms) | ×floor | bash p50 / p99 (ms) | ×floor |',
  '|---|---|---|---|---|---|---|',
);
/** A table line per scenario of `rows`: p50 / p99 and ratio for each language. */
const latencyLines = (rows, name = (scenario) => scenario) =>
  [...new Set(rows.map((r) => r.scenario))].map((scenario) => {
    const cells = Object.keys(INTERPRETERS).map((language) => {
      const r = rows.find((x) => x.scenario === scenario && x.language === language);
      return r ? `${ms(r.p50)} / ${ms(r.p99)} | ${r.ratio.toFixed(2)}` : '- | -';
    });
    return `| ${name(scenario)} | ${cells.join(' | ')} |`;
  });
lines.push(...latencyLines(results.rows.filter((r) => !r.scenario.endsWith('50ms'))));
const sessionPy = results.sessions.find((s) => s.language === 'python' && s.scenario.includes('namespace'));
lines.push(
  '',
  `Paced: one call every ${PACE_MS} ms, as an agent makes them (a warm pool refills in between). The floor for a warm run is code sent to an already-running sandboxed interpreter plus MCP: a session send, ${ms(sessionPy?.paced?.p50)} ms paced the same way (${ms(sessionPy?.p50)} ms back to back; MCP ping alone: ${ms(results.mcp.pingP50)} ms).`,
  '',
  '| paced print(1) | python p50 / p99 (ms) | node p50 / p99 (ms) | bash p50 / p99 (ms) | python ×session send (paced / back to back) |',
  '|---|---|---|---|---|',
);
for (const config of CONFIGS) {
  const cells = ['python', 'node', 'bash'].map((language) => {
    const r = results.paced.find((x) => x.scenario === config.name && x.language === language);
    return r ? `${ms(r.p50)} / ${ms(r.p99)}` : '-';
  });
  const py = results.paced.find((x) => x.scenario === config.name && x.language === 'python');
  const ratio =
    py && sessionPy?.paced
      ? `${(py.p50 / sessionPy.paced.p50).toFixed(2)} / ${(py.p50 / sessionPy.p50).toFixed(2)}`
      : '-';
  lines.push(`| ${config.name} | ${cells.join(' | ')} | ${ratio} |`);
}
lines.push(
  '',
  'Alternated call by call (every round runs both, so both see the same phases of the machine):',
  '',
  '| comparison | language | codexec p50 (ms) | baseline p50 (ms) | ratio |',
  '|---|---|---|---|---|',
);
for (const r of results.interleaved)
  lines.push(
    `| ${r.comparison} | ${r.language} | ${ms(r.codexec.p50)} | ${ms(r.base.p50)} | ${r.ratio.toFixed(2)} |`,
  );
if (results.runtimes.length > 0) {
  lines.push(
    '',
    "gVisor: docker mode with CODEXEC_DOCKER_RUNTIME=runsc against the engine's default runtime, print(1) p50:",
    '',
    '| docker: runsc ÷ default | python (ms) | node (ms) | bash (ms) |',
    '|---|---|---|---|',
  );
  for (const how of ['back to back', 'paced'])
    for (const kind of ['cold', 'warm']) {
      const cells = Object.keys(INTERPRETERS).map((language) => {
        const r = results.runtimes.find((x) => x.how === how && x.kind === kind && x.language === language);
        return r ? `${ms(r.runsc)} / ${ms(r.runc)} = ×${r.ratio.toFixed(2)}` : '-';
      });
      lines.push(`| ${kind}, ${how} | ${cells.join(' | ')} |`);
    }
}
lines.push(
  '',
  '| 50 ms compute | python p50 / p99 (ms) | ×floor | node p50 / p99 (ms) | ×floor | bash p50 / p99 (ms) | ×floor |',
  '|---|---|---|---|---|---|---|',
);
const computeRows = results.rows.filter((r) => r.scenario.endsWith('50ms'));
lines.push(...latencyLines(computeRows, (scenario) => scenario.replace(/ 50ms$/, '')));
lines.push(
  '',
  'Throughput of print(1) runs in runs/s, and its ratio to the bare interpreter at the same concurrency:',
  '',
  `| throughput | language | ${CONCURRENCY.map((c) => `c=${c}`).join(' | ')} |`,
  `|---|---|${CONCURRENCY.map(() => '---|').join('')}`,
);
for (const scenario of [...new Set(results.throughput.map((t) => t.scenario))]) {
  for (const language of Object.keys(INTERPRETERS)) {
    const cells = CONCURRENCY.map((c) => {
      const t = results.throughput.find(
        (x) => x.scenario === scenario && x.language === language && x.concurrency === c,
      );
      return t ? `${t.perSecond.toFixed(1)} (×${t.ratio.toFixed(2)})` : '-';
    });
    lines.push(`| ${scenario} | ${language} | ${cells.join(' | ')} |`);
  }
}
if (results.sessions.length > 0) {
  lines.push(
    '',
    '| session send `x += 1` over MCP | p50 / p99 (ms) back to back | p50 / p99 (ms) paced |',
    '|---|---|---|',
  );
  for (const s of results.sessions) {
    const paced = s.paced ? `${ms(s.paced.p50)} / ${ms(s.paced.p99)}` : '-';
    lines.push(
      `| ${s.scenario.replace('codexec ', '')} ${s.language} | ${ms(s.p50)} / ${ms(s.p99)} | ${paced} |`,
    );
  }
}
lines.push(
  '',
  `Server RSS: idle ${ms(results.memory.idleRssMb)} MB, peak under load ${ms(results.memory.loadPeakRssMb)} MB.`,
);
console.log(lines.join('\n'));
mkdirSync(dirname(jsonOut), { recursive: true });
writeFileSync(jsonOut, `${JSON.stringify(results, null, 2)}\n`);
