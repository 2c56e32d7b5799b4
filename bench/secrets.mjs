// The secrets filter's cost: MB/s of the matcher in-process on 50 MB (alone, and inside the
// output collector against the collector without it), 50 MB printed by a run end to end with
// the filter on and off, and the p50 of a small warm run (print(1)) on and off, alternated call
// by call on two servers of the same build. Run `npm run build` first.
// Usage: node bench/secrets.mjs [--quick]
import { OutputCollector } from '../dist/engine/index.js';
import { SecretsFilter } from '../dist/policy/index.js';
import { interleave, ms, startServer } from './lib.mjs';

const quick = process.argv.includes('--quick');
const MB = 1024 * 1024;
const TOTAL = 50 * MB;
const CHUNK = 64 * 1024;
const N = quick ? 40 : 200;

/** 64 KB of output made of `line`, repeated to 50 MB. */
function chunkOf(line) {
  return line.repeat(Math.ceil(CHUNK / line.length)).slice(0, CHUNK);
}
const TEXTS = {
  'log lines': chunkOf('INFO 2024-05-01T12:00:00Z worker=3 item=12345 status=ok path=/srv/app/data.csv\n'),
  // Dense in the characters secrets start with (s, g, x, e, A, -, :), none of them one.
  'near misses': chunkOf('see sk-short, gh_x, xo-x, eyJ.e, AKIA-, ----, http://host:80/a, s g x e A -\n'),
  'one line, no newline': chunkOf('abcdefghij'),
};

function values(n) {
  return Array.from({ length: n }, (_, i) => `secret-value-${i}-${(i * 7919).toString(36)}xyz`);
}

function mbPerSecond(run) {
  run(); // warm the JIT
  const started = performance.now();
  run();
  return TOTAL / MB / ((performance.now() - started) / 1000);
}

function throughFilter(filter, text) {
  return () => {
    const stream = filter.stream();
    for (let done = 0; done < TOTAL; done += CHUNK) stream.write(text);
    stream.end();
  };
}

function throughCollector(filter, bytes) {
  return () => {
    const collector = new OutputCollector({ maxChars: 10_000, head: 4000, tail: 4000 }, filter?.stream());
    for (let done = 0; done < TOTAL; done += CHUNK) collector.push(bytes);
    collector.finish();
  };
}

console.error('In process, 50 MB in 64 KB writes (MB/s):');
console.log(
  '| 50 MB in 64 KB writes | filter alone, 2 values | 20 values | 100 values | collector without filter | collector with filter (2 values) |',
);
console.log('|---|---|---|---|---|---|');
for (const [name, text] of Object.entries(TEXTS)) {
  const bytes = Buffer.from(text);
  const cells = [
    mbPerSecond(throughFilter(new SecretsFilter({ values: values(2) }), text)),
    mbPerSecond(throughFilter(new SecretsFilter({ values: values(20) }), text)),
    mbPerSecond(throughFilter(new SecretsFilter({ values: values(100) }), text)),
    mbPerSecond(throughCollector(undefined, bytes)),
    mbPerSecond(throughCollector(new SecretsFilter({ values: values(2) }), bytes)),
  ];
  console.log(`| ${name} | ${cells.map((c) => c.toFixed(0)).join(' | ')} |`);
}

// End to end: two servers of the same build, the filter on (with a secret in its env, as a real
// server would have) and off, called in turn.
const common = { CODEXEC_SANDBOX_MODE: 'namespace', CODEXEC_POOL_SIZE: '2' };
const on = await startServer({ ...common, FOO_API_KEY: 'bench-secret-value-1234' });
const off = await startServer({ ...common, CODEXEC_REDACT_SECRETS: 'false' });
try {
  const big = [
    'import sys',
    `chunk = ${JSON.stringify(TEXTS['log lines'])}`,
    `for _ in range(${TOTAL / CHUNK}): sys.stdout.write(chunk)`,
  ].join('\n');
  const bigRun = (server) => () => server.call('execute_code', { language: 'python', code: big });
  const e2e = await interleave({ on: bigRun(on), off: bigRun(off) }, { n: quick ? 3 : 7, warmup: 1 });
  const rate = (p50) => TOTAL / MB / (p50 / 1000);
  console.log('');
  console.log('| end to end over MCP | filter on | filter off |');
  console.log('|---|---|---|');
  console.log(`| a run printing 50 MB, p50 (ms) | ${ms(e2e.on.p50)} | ${ms(e2e.off.p50)} |`);
  console.log(`| the same as MB/s | ${rate(e2e.on.p50).toFixed(0)} | ${rate(e2e.off.p50).toFixed(0)} |`);

  const small = (server) => () => server.call('execute_code', { language: 'python', code: 'print(1)' });
  const paced = await interleave({ on: small(on), off: small(off) }, { n: N, gapMs: 100 });
  console.log(
    `| warm python print(1), paced, p50 / p99 (ms) | ${ms(paced.on.p50)} / ${ms(paced.on.p99)} | ${ms(paced.off.p50)} / ${ms(paced.off.p99)} |`,
  );
} finally {
  await on.close();
  await off.close();
}
