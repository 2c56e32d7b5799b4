#!/usr/bin/env node
// Execution-log search over N synthetic entries (default 1,000,000), in one run:
//   1. writes seed-format JSONL (daily files) into a temp dir,
//   2. builds index.db through the real ExecutionLogs (dist/) and times it,
//   3. measures p50/p99 of `query` and `status` searches through ExecutionLogs.search,
//   4. measures the seed's MVP approach — a sequential JSONL scan with in-memory filtering —
//      on the same files and filters, and prints the ratios.
// Usage: npm run build && node bench/log-search.mjs [--entries N] [--samples N] [--scan-samples N] [--keep]
import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { ExecutionLogs } from '../dist/logs/index.js';
import { generate, VOCAB } from './log-corpus.mjs';

const { values: opts } = parseArgs({
  options: {
    entries: { type: 'string', default: '1000000' },
    samples: { type: 'string', default: '200' },
    'scan-samples': { type: 'string', default: '3' },
    keep: { type: 'boolean', default: false },
  },
});
const ENTRIES = Number(opts.entries);
const SAMPLES = Number(opts.samples);
const SCAN_SAMPLES = Number(opts['scan-samples']);
const DAYS = 90;

/** The seed's MVP: read every file, parse every line, filter, sort newest first, count, take 20. */
async function scan(dir, filters) {
  const needle = filters.query?.toLowerCase();
  const matches = [];
  for (const name of readdirSync(dir).sort()) {
    const text = await readFile(join(dir, name), 'utf8');
    for (const line of text.split('\n')) {
      if (line === '') continue;
      const e = JSON.parse(line);
      const status = e.timed_out ? 'timeout' : e.exit_code === 0 ? 'success' : 'failed';
      if (filters.status && status !== filters.status) continue;
      if (needle && !`${e.code}\n${e.stdout}\n${e.stderr}`.toLowerCase().includes(needle)) continue;
      matches.push({ execution_id: e.execution_id, executed_at: e.executed_at, status });
    }
  }
  matches.sort((a, b) => b.executed_at.localeCompare(a.executed_at));
  return { results: matches.slice(0, filters.limit ?? 20), total_count: matches.length };
}

const percentile = (sorted, p) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
const ms = (n) => `${n.toFixed(n < 10 ? 2 : 1)} ms`;

async function time(fn) {
  const t0 = process.hrtime.bigint();
  const value = await fn();
  return { ms: Number(process.hrtime.bigint() - t0) / 1e6, value };
}

async function measure(label, count, filtersFor, run) {
  const times = [];
  let totals = 0;
  for (let i = 0; i < count; i++) {
    const { ms: t, value } = await time(() => run(filtersFor(i)));
    times.push(t);
    totals += value.total_count;
  }
  times.sort((a, b) => a - b);
  return { label, p50: percentile(times, 50), p99: percentile(times, 99), count, meanTotal: totals / count };
}

const home = mkdtempSync(join(tmpdir(), 'codexec-bench-logs-'));
const logDir = join(home, 'logs');
try {
  console.log(`codexec log search benchmark: ${ENTRIES.toLocaleString('en')} entries, ${DAYS} daily files`);
  const gen = await time(() => generate(logDir, ENTRIES, DAYS));
  const bytes = readdirSync(logDir).reduce((sum, name) => sum + statSync(join(logDir, name)).size, 0);
  console.log(`  generated JSONL          ${(bytes / 1e6).toFixed(0)} MB in ${(gen.ms / 1000).toFixed(1)} s`);

  const history = new ExecutionLogs({
    logDir,
    indexPath: join(home, 'index.db'),
    retentionDays: { success: 36500, failure: 36500, session: 36500 },
  });
  const build = await time(() => history.search({ limit: 1 }));
  const dbBytes = ['index.db', 'index.db-wal'].reduce(
    (sum, f) => sum + (statSync(join(home, f), { throwIfNoEntry: false })?.size ?? 0),
    0,
  );
  console.log(
    `  index build              ${(build.ms / 1000).toFixed(1)} s (${Math.round(ENTRIES / (build.ms / 1000)).toLocaleString('en')} entries/s), ` +
      `index.db ${(dbBytes / 1e6).toFixed(0)} MB, ${build.value.total_count.toLocaleString('en')} entries indexed`,
  );

  // Query terms of different selectivity: a common library, an error class, rare identifiers.
  const terms = [
    'pandas',
    'ModuleNotFoundError',
    'requests status_code',
    VOCAB[5000],
    VOCAB[15000],
    'ZeroDivision',
  ];
  const statuses = ['failed', 'timeout', 'success'];
  const queryFilters = (i) => ({ query: terms[i % terms.length], limit: 20 });
  const statusFilters = (i) => ({ status: statuses[i % statuses.length], limit: 20 });
  const comboFilters = (i) => ({
    language: 'python',
    status: 'failed',
    query: terms[i % 2],
    since: '2026-02-15',
    limit: 20,
  });

  const indexed = [
    await measure('index  query', SAMPLES, queryFilters, (f) => history.search(f)),
    await measure('index  status', SAMPLES, statusFilters, (f) => history.search(f)),
    await measure('index  lang+status+query+since', SAMPLES, comboFilters, (f) => history.search(f)),
    await measure(
      'index  status+since',
      SAMPLES,
      (i) => ({ status: statuses[i % statuses.length], since: '2026-02-15', limit: 20 }),
      (f) => history.search(f),
    ),
    await measure(
      'index  session',
      SAMPLES,
      (i) => ({ session_id: `sess_${((i * 7919) % 5000).toString(16).padStart(12, '0')}`, limit: 20 }),
      (f) => history.search(f),
    ),
    await measure(
      'index  no filter',
      SAMPLES,
      () => ({ limit: 20 }),
      (f) => history.search(f),
    ),
  ];
  const perTerm = [];
  for (const term of terms) {
    perTerm.push(
      await measure(
        `index  query "${term}"`,
        Math.max(20, SAMPLES / 10),
        () => ({ query: term, limit: 20 }),
        (f) => history.search(f),
      ),
    );
  }
  await history.close();

  // Baseline on the same files and filters (a substring scan, as the seed's MVP describes).
  const scanned = [
    await measure(
      'scan   query',
      SCAN_SAMPLES,
      (i) => ({ query: ['pandas', 'modulenotfounderror', 'zerodivision'][i % 3] }),
      (f) => scan(logDir, f),
    ),
    await measure('scan   status', SCAN_SAMPLES, statusFilters, (f) => scan(logDir, f)),
  ];

  console.log('\n  search                             p50          p99     samples  mean total_count');
  for (const r of [...indexed, ...perTerm, ...scanned]) {
    console.log(
      `  ${r.label.padEnd(34)} ${ms(r.p50).padStart(10)} ${ms(r.p99).padStart(12)} ${String(r.count).padStart(8)}  ${Math.round(r.meanTotal).toLocaleString('en').padStart(12)}`,
    );
  }
  const [iq, is] = indexed;
  const [sq, ss] = scanned;
  console.log('\n  ratio (JSONL scan p50 / index p50)');
  console.log(
    `    query   ${(sq.p50 / iq.p50).toFixed(0)}x faster   (target p50 < 20 ms: ${iq.p50 < 20 ? 'met' : 'NOT met'})`,
  );
  console.log(
    `    status  ${(ss.p50 / is.p50).toFixed(0)}x faster   (target p50 < 20 ms: ${is.p50 < 20 ? 'met' : 'NOT met'})`,
  );
} finally {
  if (opts.keep) console.log(`\n  kept ${home}`);
  else rmSync(home, { recursive: true, force: true });
}
