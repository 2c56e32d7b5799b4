// Speed under many users (not part of npm test): tail latency per sandbox mode and language, paced
// and at concurrency 8; throughput of mixed one-shots at c=1/4/8; idle RSS of a fresh stdio server.
// Every number sits beside its floor measured in the same run, alternated block by block (each
// (mode, language) in turn, BLOCK calls at a time) so both see the same phases of a shared machine.
// Every run is `print(1)` (node: console.log(1), bash: echo 1) and must succeed with stdout `1\n`;
// failures are counted, and any failure makes the exit status 1.
//
//   npm run build && node bench/speed.mjs [--modes namespace,docker] [--languages python,node,bash]
//     [--paced 500] [--n 600] [--only latency|throughput|rss] [--quick] [--cli other/dist/cli.js]
//     [--settle 0]
//
// Modes: namespace, landlock, subprocess, docker (podman or docker, where the `codexec-sandbox`
// image exists: `node dist/cli.js image build`; podman uses runc where installed).
//
// Columns:
// - paced: one call every 100 ms (the pause is not counted), --paced calls per cell. `one-shot` is
//   execute_code; `send` (the floor) is send_to_session of the same code to a session of the same
//   language on the same server, paced the same way; `bare` is the interpreter spawnSync'd outside
//   codexec (python3 -I -S -c, node -e, bash -c; clean env) in the pause before each send.
//   p50 / p99 / p99.9 in ms (p99.9 of fewer than 1,000 calls is about the slowest one); p99/p50 is
//   the tail ratio (target ≤ 3); fail counts runs that did not succeed with the right output.
// - c=8: --n one-shots of one language with 8 callers at once, beside the bare interpreter spawned
//   8 at a time; runs/s is calls over the block's wall time.
// - throughput: --n mixed python/node/bash one-shots (in turn) at c=1/4/8, beside the same mix of
//   bare interpreters spawned at the same concurrency outside codexec, and beside the sandbox floor:
//   the same mix under bubblewrap alone, no codexec (speed-runs.mjs sandboxed(): namespace mode's
//   namespaces and mounts, a fresh workspace per run, node an ES module file with codexec's shim,
//   bash a script file), with no seccomp, cgroup or uid drop, so cheaper than any real sandbox;
//   python counts as `/usr/bin/true` under bwrap (codexec's python runs are zygote forks of ~3 ms,
//   so the floor charges no python start-up). If even the floor is below a target rate, the
//   target is out of reach on this machine. The floor binds where the CPUs are saturated (c=8):
//   at c=1 it runs one process at a time, while codexec's warm pool starts the next interpreter on
//   the idle core, so codexec can beat it there. The three run alternated in halves: codexec, bare,
//   floor, codexec, bare, floor, with a 2 s pause after each codexec block so that the refill of
//   its warm pool lands there, not on the floors (its wall time is not counted, its CPU time is).
//   `machine CPU ms/run` is the busy time of all CPUs (/proc/stat: everything on the machine,
//   other users too) per run; `server CPU ms/run` is the server process's own (/proc/PID/stat
//   utime + stime, not its helpers'). Its floor, `SDK one tool: CPU ms/call`, is the one-tool MCP
//   server on the official SDK (bench/fixtures/sdk-one-tool.mjs, bundled) answering the same
//   execute_code calls at the same concurrency, in its own block after each floor block: what
//   the SDK's framing and zod validation cost a call, with no run behind it.
//   A server's runs cost more while V8 is still optimizing its run path (bench/warmup.mjs: a fresh
//   server pays ~1.8× its settled CPU over its first 400 runs): the c=1 row holds its first --n.
//   --settle N has each server serve N mixed runs at c=8 first (not counted), for the rows of a
//   server that has settled.
//   RSS (MB) of the server process before (after a short warm-up) and after.
// - idle RSS: a fresh `codexec serve` 1 s after it connected (no run yet) and ~5 s after its first
//   run, beside two floors started at the same moment: a bare `node -e 'setInterval(()=>{},1e6)'`,
//   and a one-tool MCP server on the official SDK (bench/fixtures/sdk-one-tool.mjs, called once
//   when the server runs), as plain ESM and as an esbuild bundle; `+ helpers` adds the RSS of the
//   server's descendants (forker, zygote, warm sandboxes: shared pages counted in each).
import { spawn, spawnSync } from 'node:child_process';
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { descendantsOf, machineCpuMs, ms, processCpuMs, rssMb, sdkOneTool, startServer } from './lib.mjs';
import {
  bare,
  bareSync,
  CLEAN_ENV,
  concurrently,
  oneShot,
  Series,
  sandboxed,
  send,
  sleep,
} from './speed-runs.mjs';

const { values } = parseArgs({
  options: {
    modes: { type: 'string', default: 'namespace,docker' },
    languages: { type: 'string', default: 'python,node,bash' },
    paced: { type: 'string' },
    n: { type: 'string' },
    only: { type: 'string' },
    quick: { type: 'boolean', default: false },
    cli: { type: 'string' },
    settle: { type: 'string', default: '0' },
  },
});
const PACED = Number(values.paced ?? (values.quick ? 20 : 500));
const N = Number(values.n ?? (values.quick ? 48 : 600));
const BLOCK = values.quick ? 10 : 50; // calls of one kind before the next kind's turn
const PACE_MS = 100;
const SETTLE_MS = 2000; // throughput: pause after codexec's block (timedBlock)
const SETTLE_RUNS = Number(values.settle); // throughput: c=8 runs a server serves before its rows
if (!Number.isInteger(SETTLE_RUNS) || SETTLE_RUNS < 0) throw new Error('--settle takes a count of runs');
const CONCURRENCY = [1, 4, 8];
const LANGUAGES = values.languages.split(',');
const cli = values.cli && { cli: resolve(values.cli) };
for (const language of LANGUAGES)
  if (!['python', 'node', 'bash'].includes(language)) throw new Error(`unknown language ${language}`);
if (!(PACED > 0 && N > 0)) throw new Error('--paced and --n take a positive number');
if (values.only && !['latency', 'throughput', 'rss'].includes(values.only))
  throw new Error('--only takes latency, throughput or rss');

const ENGINE = ['podman', 'docker'].find(
  (engine) => spawnSync(engine, ['image', 'inspect', 'codexec-sandbox'], { stdio: 'ignore' }).status === 0,
);
const MODE_ENV = {
  namespace: { CODEXEC_SANDBOX_MODE: 'namespace' },
  landlock: { CODEXEC_SANDBOX_MODE: 'landlock' },
  subprocess: { CODEXEC_SANDBOX_MODE: 'subprocess' },
  docker: ENGINE && {
    CODEXEC_SANDBOX_MODE: 'docker',
    CODEXEC_CONTAINER_ENGINE: ENGINE,
    CODEXEC_DOCKER_IMAGE: 'codexec-sandbox',
  },
};
const MODES = values.modes.split(',').filter((mode) => {
  if (!(mode in MODE_ENV)) throw new Error(`unknown mode ${mode}`);
  if (!MODE_ENV[mode])
    console.error(`docker mode skipped: no podman or docker has the codexec-sandbox image`);
  return Boolean(MODE_ENV[mode]);
});
const all = []; // every Series, for the exit status
const series = () => {
  const made = new Series();
  all.push(made);
  return made;
};
const cells = (s) => `${ms(s.p50)} | ${ms(s.p99)} | ${ms(s.p999)} | ${(s.p99 / s.p50).toFixed(1)}`;
const out = [];
const log = (line) => console.error(`  ${line}`);

/** Paced and c=8 latency of every (mode, language), each beside its floors. */
async function latency() {
  const servers = {};
  const rows = [];
  for (const mode of MODES) {
    servers[mode] = await startServer(MODE_ENV[mode], cli);
    for (const language of LANGUAGES) {
      const started = await servers[mode].call('start_session', { language });
      const row = { mode, language, server: servers[mode], session: started.session_id };
      Object.assign(row, { oneShot: series(), send: series(), bare: series() });
      Object.assign(row, { c8: series(), c8Bare: series(), c8Ms: 0, c8BareMs: 0 });
      rows.push(row);
    }
  }
  for (const row of rows)
    for (let i = 0; i < 5; i++) {
      await oneShot(row.server, row.language);
      await send(row.server, row.session, row.language);
      bareSync(row.language);
    }
  log(`paced: ${PACED} calls per cell, ${PACE_MS} ms apart, ${BLOCK} at a time`);
  while (rows.some((row) => row.send.n < PACED)) {
    for (const row of rows) {
      for (let i = 0; i < BLOCK && row.oneShot.n < PACED; i++) {
        await sleep(PACE_MS);
        row.oneShot.add(await oneShot(row.server, row.language));
      }
      for (let i = 0; i < BLOCK && row.send.n < PACED; i++) {
        const pause = performance.now();
        row.bare.add(bareSync(row.language));
        await sleep(PACE_MS - (performance.now() - pause));
        row.send.add(await send(row.server, row.session, row.language));
      }
    }
    log(`${rows[0].send.n}/${PACED}`);
  }
  log(`c=8: ${N} calls per cell, ${BLOCK * 2} at a time`);
  while (rows.some((row) => row.c8.n < N)) {
    for (const row of rows) {
      const count = Math.min(BLOCK * 2, N - row.c8.n);
      if (count === 0) continue;
      const at8 = { count, concurrency: 8 };
      row.c8Ms += await concurrently(() => oneShot(row.server, row.language), { ...at8, series: row.c8 });
      row.c8BareMs += await concurrently(() => bare(row.language), { ...at8, series: row.c8Bare });
    }
    log(`${rows[0].c8.n}/${N}`);
  }
  for (const server of Object.values(servers)) await server.close();
  out.push(
    `### Paced: one call every ${PACE_MS} ms, ${PACED} per cell (ms)`,
    '',
    '| mode | language | one-shot p50 | p99 | p99.9 | p99/p50 | send p50 | p99 | p99.9 | p99/p50 | bare p50 | p99 | p99.9 | p99/p50 | fail |',
    '|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|',
  );
  for (const row of rows) {
    const fail = row.oneShot.failures + row.send.failures + row.bare.failures;
    const line = [row.oneShot, row.send, row.bare].map((s) => cells(s.stats())).join(' | ');
    out.push(`| ${row.mode} | ${row.language} | ${line} | ${fail} |`);
  }
  out.push(
    '',
    `### Concurrency 8: ${N} one-shots per cell, beside the bare interpreter at c=8 (ms)`,
    '',
    '| mode | language | one-shot p50 | p99 | p99.9 | p99/p50 | runs/s | bare p50 | p99 | p99.9 | p99/p50 | runs/s | fail |',
    '|---|---|---|---|---|---|---|---|---|---|---|---|---|',
  );
  for (const row of rows) {
    const rate = (s, wall) => ((s.n / wall) * 1000).toFixed(1);
    const codexec = `${cells(row.c8.stats())} | ${rate(row.c8, row.c8Ms)}`;
    const floor = `${cells(row.c8Bare.stats())} | ${rate(row.c8Bare, row.c8BareMs)}`;
    out.push(
      `| ${row.mode} | ${row.language} | ${codexec} | ${floor} | ${row.c8.failures + row.c8Bare.failures} |`,
    );
  }
}

/**
 * `count` runs of `task` at `concurrency` into `into`, adding their wall and CPU times; with `pid`
 * (a server), then SETTLE_MS of pause, whose CPU time (the server refilling its warm pool after the
 * burst) counts to the server's runs but its wall time does not, and does not land on the floors.
 */
async function timedBlock(task, count, concurrency, into, pid, settleMs = SETTLE_MS) {
  const machine = machineCpuMs();
  const server = pid && processCpuMs(pid);
  into.wallMs += await concurrently(task, { count, concurrency, series: into.series });
  if (pid && settleMs) await sleep(settleMs);
  into.machineMs += machineCpuMs() - machine;
  if (pid) into.serverMs += processCpuMs(pid) - server;
}

/** Runs per second of a block's series over its wall time. */
const rate = (kind) => (kind.series.n / kind.wallMs) * 1000;

/** Mixed one-shots at c=1/4/8 per mode, beside the same mix of bare interpreters and of bwrap alone. */
async function throughput() {
  out.push(
    '',
    `### Throughput: ${N} mixed ${LANGUAGES.join('/')} one-shots per cell, beside the same mix of bare interpreters and under bubblewrap alone (sandbox floor; python counted as \`bwrap … /usr/bin/true\`)`,
    '',
    '| mode | c | runs/s | bare runs/s | ÷ bare | sandbox floor runs/s | ÷ sandbox floor | fail | server RSS before → after (MB) | machine CPU ms/run | bare: machine CPU ms/run | sandbox floor: machine CPU ms/run | server CPU ms/run | SDK one tool: CPU ms/call |',
    '|---|---|---|---|---|---|---|---|---|---|---|---|---|---|',
  );
  // The floor under the server's own CPU: the one-tool SDK server (bundled) answering the same
  // calls at the same concurrency, its CPU per call.
  const sdk = await sdkOneTool();
  const sdkServer = await startServer({}, { cli: sdk.bundled });
  for (let i = 0; i < 200; i++) await oneShot(sdkServer, LANGUAGES[i % LANGUAGES.length]);
  for (const mode of MODES) {
    const server = await startServer(MODE_ENV[mode], cli);
    for (const language of LANGUAGES) for (let i = 0; i < 3; i++) await oneShot(server, language);
    if (SETTLE_RUNS > 0) {
      log(`${mode}: ${SETTLE_RUNS} runs first (--settle)`);
      const warming = { series: new Series(), wallMs: 0, machineMs: 0 };
      await timedBlock(
        (i) => oneShot(server, LANGUAGES[i % LANGUAGES.length]),
        SETTLE_RUNS,
        8,
        warming,
        server.pid,
      );
      if (warming.series.failures) throw new Error(`${warming.series.failures} of the --settle runs failed`);
    }
    for (const language of LANGUAGES) await sandboxed(language);
    const rssBefore = rssMb(server.pid);
    const results = [];
    for (const concurrency of CONCURRENCY) {
      const codexec = { series: series(), wallMs: 0, machineMs: 0, serverMs: 0 };
      const floor = { series: series(), wallMs: 0, machineMs: 0 };
      const sandbox = { series: series(), wallMs: 0, machineMs: 0 };
      const sdkCalls = { series: series(), wallMs: 0, machineMs: 0, serverMs: 0 };
      // Two halves each, alternated: codexec, bare, sandbox floor, SDK, codexec, bare, sandbox floor, SDK.
      for (const half of [Math.ceil(N / 2), Math.floor(N / 2)]) {
        const mixed = (i) => LANGUAGES[i % LANGUAGES.length];
        await timedBlock((i) => oneShot(server, mixed(i)), half, concurrency, codexec, server.pid);
        await timedBlock((i) => bare(mixed(i)), half, concurrency, floor);
        await timedBlock((i) => sandboxed(mixed(i)), half, concurrency, sandbox);
        await timedBlock((i) => oneShot(sdkServer, mixed(i)), half, concurrency, sdkCalls, sdkServer.pid, 0);
      }
      results.push({ concurrency, codexec, floor, sandbox, sdkCalls });
      log(
        `${mode} c=${concurrency}: ${rate(codexec).toFixed(1)} runs/s, sandbox floor ${rate(sandbox).toFixed(1)} runs/s`,
      );
    }
    const rssAfter = rssMb(server.pid);
    await server.close();
    for (const { concurrency, codexec, floor, sandbox, sdkCalls } of results) {
      const perRun = (value, kind, digits = 1) => (value / kind.series.n).toFixed(digits);
      const fail = [codexec, floor, sandbox, sdkCalls].reduce((sum, kind) => sum + kind.series.failures, 0);
      const [ours, bareRate, sandboxRate] = [codexec, floor, sandbox].map(rate);
      const cpu = [codexec, floor, sandbox].map((kind) => perRun(kind.machineMs, kind));
      out.push(
        `| ${mode} | ${concurrency} | ${ours.toFixed(1)} | ${bareRate.toFixed(1)} | ${(ours / bareRate).toFixed(2)} | ${sandboxRate.toFixed(1)} | ${(ours / sandboxRate).toFixed(2)} | ${fail} | ${rssBefore.toFixed(1)} → ${rssAfter.toFixed(1)} | ${cpu.join(' | ')} | ${perRun(codexec.serverMs, codexec)} | ${perRun(sdkCalls.serverMs, sdkCalls, 2)} |`,
      );
    }
  }
  await sdkServer.close();
  sdk.close();
}

/** RSS of a fresh server (1 s after start, ~5 s after its first run) beside an idle bare node and SDK. */
async function idleRss() {
  out.push(
    '',
    '### Idle RSS of a fresh stdio server (MB), beside a bare idle node and a one-tool server on the MCP SDK (plain ESM; esbuild bundle)',
    '',
    '| mode | after start | bare node | SDK one tool | SDK bundled | 5 s after first run | bare node | SDK one tool | SDK bundled | + helpers |',
    '|---|---|---|---|---|---|---|---|---|---|',
  );
  const sdk = await sdkOneTool();
  for (const mode of MODES) {
    const node = spawn(process.execPath, ['-e', 'setInterval(()=>{},1e6)'], {
      env: CLEAN_ENV,
      stdio: 'ignore',
    });
    const floors = [await startServer({}, { cli: sdk.plain }), await startServer({}, { cli: sdk.bundled })];
    const server = await startServer(MODE_ENV[mode], cli);
    await sleep(1000);
    const pids = [server.pid, node.pid, ...floors.map((floor) => floor.pid)];
    const start = pids.map((pid) => rssMb(pid));
    series().add(await oneShot(server, LANGUAGES[0]));
    for (const floor of floors) series().add(await oneShot(floor, LANGUAGES[0]));
    await sleep(5000);
    const after = pids.map((pid) => rssMb(pid));
    const helpers = descendantsOf(server.pid).reduce((sum, pid) => {
      try {
        return sum + rssMb(pid);
      } catch {
        return sum; // gone meanwhile
      }
    }, 0);
    node.kill();
    for (const floor of floors) await floor.close();
    await server.close();
    const mb = (values) => values.map((value) => value.toFixed(1)).join(' | ');
    out.push(`| ${mode} | ${mb(start)} | ${mb(after)} | ${mb([after[0] + helpers])} |`);
  }
  sdk.close();
}

console.error(
  `modes ${MODES.join(', ')}; languages ${LANGUAGES.join(', ')}; docker engine ${ENGINE ?? 'none'}`,
);
if (!values.only || values.only === 'latency') await latency();
if (!values.only || values.only === 'throughput') await throughput();
if (!values.only || values.only === 'rss') await idleRss();
const failures = all.reduce((sum, s) => sum + s.failures, 0);
out.push('', `Failures: ${failures}.`);
console.log(out.join('\n'));
process.exitCode = failures === 0 ? 0 : 1;
