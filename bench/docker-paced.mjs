// Paced one-shots in docker mode: `print(1)`-like runs 100 ms apart, per language,
// p50 / p99 / p99.9 and how many ran warm, for this build and optionally others (--base: another
// dist/cli.js). Builds run in alternated blocks of --block runs (each its own server, the other
// idle meanwhile), so both see the same phases of a shared machine without each server's
// background container starts competing with the other's runs.
// With --modes docker,namespace each build runs in each mode, and the docker p50 is printed as a
// ratio to namespace mode's (its floor) from the same run.
// Usage: node bench/docker-paced.mjs [--n 500] [--block 50] [--base /path/to/dist/cli.js]
//        [--languages python,node,bash] [--modes docker] [--gap 100]   (BENCH_SLOW=ms: print runs slower;
//        CODEXEC_DOCKER_RUNTIME=runsc: docker mode under gVisor)
import { resolve } from 'node:path';
import { CLI, ms, startServer } from './lib.mjs';

const arg = (name, fallback) => {
  const at = process.argv.indexOf(name);
  return at === -1 ? fallback : process.argv[at + 1];
};
const N = Number(arg('--n', '500'));
const BLOCK = Number(arg('--block', '50'));
const GAP_MS = Number(arg('--gap', '100'));
const MODES = arg('--modes', arg('--mode', 'docker')).split(',');
const LANGUAGES = arg('--languages', 'python,node,bash').split(',');
const CODE = { python: 'print(1)', node: 'console.log(1)', bash: 'echo 1' };
const clis = { this: CLI, ...(arg('--base') && { base: resolve(arg('--base')) }) };
/** Each build in each mode, named `build` (one mode) or `build/mode`. */
const builds = Object.fromEntries(
  Object.entries(clis).flatMap(([name, cli]) =>
    MODES.map((mode) => [MODES.length > 1 ? `${name}/${mode}` : name, { cli, mode }]),
  ),
);

/** A server of `cli` in `mode`; its home is removed with it. */
const start = ({ cli, mode }) =>
  startServer(
    {
      CODEXEC_SANDBOX_MODE: mode,
      ...(process.env.CODEXEC_POOL_SIZE && { CODEXEC_POOL_SIZE: process.env.CODEXEC_POOL_SIZE }),
      ...(process.env.CODEXEC_DOCKER_RUNTIME && {
        CODEXEC_DOCKER_RUNTIME: process.env.CODEXEC_DOCKER_RUNTIME,
      }),
    },
    { cli },
  );

const pause = (msecs) => new Promise((done) => setTimeout(done, msecs));
const pick = (sorted, q) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];

const servers = {};
for (const [name, build] of Object.entries(builds)) servers[name] = await start(build);
console.log(
  `${MODES.join(' and ')} mode, ${N} runs per language and build, ${GAP_MS} ms apart, blocks of ${BLOCK}`,
);
for (const language of LANGUAGES) {
  const times = Object.fromEntries(Object.keys(builds).map((name) => [name, []]));
  const warm = Object.fromEntries(Object.keys(builds).map((name) => [name, 0]));
  for (let done = 0; done < N; done += BLOCK) {
    for (const name of Object.keys(builds)) {
      const server = servers[name];
      // A few unmeasured runs after the other build's block: this server's pool refills at its pace.
      for (let i = -3; i < Math.min(BLOCK, N - done); i++) {
        await pause(GAP_MS);
        const t0 = performance.now();
        const result = await server.client.callTool(
          { name: 'execute_code', arguments: { language, code: CODE[language] } },
          { timeout: 120_000 },
        );
        const took = performance.now() - t0;
        const out = result.structuredContent;
        if (!out?.success) throw new Error(`${name} ${language}: ${JSON.stringify(result)}`);
        if (i < 0) continue;
        times[name].push(took);
        if (process.env.BENCH_SLOW && took > Number(process.env.BENCH_SLOW))
          console.log(`  ${name} ${language} run ${done + i}: ${ms(took)} ms${out.warm ? '' : ' (cold)'}`);
        if (out.warm) warm[name] += 1;
      }
    }
  }
  const p50s = {};
  for (const [name, list] of Object.entries(times)) {
    const sorted = list.sort((a, b) => a - b);
    const [p50, p99, p999] = [0.5, 0.99, 0.999].map((q) => pick(sorted, q));
    p50s[name] = p50;
    console.log(
      `${name.padEnd(16)} ${language.padEnd(7)} p50 ${ms(p50).padStart(8)}  p99 ${ms(p99).padStart(8)}  p99.9 ${ms(p999).padStart(8)} ms  p99/p50 ${(p99 / p50).toFixed(2).padStart(6)}  warm ${warm[name]}/${list.length}  max ${ms(sorted.at(-1))}`,
    );
  }
  for (const name of Object.keys(clis)) {
    const [docker, floor] = [p50s[`${name}/docker`], p50s[`${name}/namespace`]];
    if (docker && floor)
      console.log(
        `${name.padEnd(16)} ${language.padEnd(7)} docker p50 / namespace p50 ${(docker / floor).toFixed(2)}`,
      );
  }
}
await Promise.all(Object.values(servers).map((server) => server.close()));
