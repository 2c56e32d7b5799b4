#!/usr/bin/env node
// Execution-log search on PostgreSQL beside SQLite, over N synthetic entries (default 1,000,000):
//   1. writes the log-search corpus (bench/log-corpus.mjs) as daily JSONL files,
//   2. builds index.db through the real ExecutionLogs (dist/),
//   3. loads the same lines into a throwaway PostgreSQL cluster (initdb in a temp dir, a loopback
//      port) through the store's own batch path (FTS5 tokens, multi-row INSERT), then VACUUM ANALYZE,
//   4. measures p50/p99 of the same searches through ExecutionLogs and PgExecutionLogs (as a tool
//      asks: the caller's principal), checks both give the same total_count, and prints the ratio.
// Not part of npm test. Needs Debian's postgresql. Usage: npm run build && node bench/log-search-pg.mjs
//   [--entries N] [--samples N] [--keep] [--explain WORDS]
import { createReadStream, mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { parseArgs } from 'node:util';
import { ExecutionLogs, PgExecutionLogs } from '../dist/logs/index.js';
import { insertBatch, toBatch } from '../dist/logs/postgres/rows.js';
import { LOG_COMPONENT, LOG_MIGRATIONS } from '../dist/logs/postgres/schema.js';
import { searchStatement } from '../dist/logs/postgres/search.js';
import { termTokens } from '../dist/logs/postgres/tokens.js';
import { Postgres } from '../dist/store/index.js';
import { startPostgres } from './cluster.mjs';
import { generate, VOCAB } from './log-corpus.mjs';

const { values: opts } = parseArgs({
  options: {
    entries: { type: 'string', default: '1000000' },
    samples: { type: 'string', default: '200' },
    keep: { type: 'boolean', default: false },
    explain: { type: 'string' },
  },
});
const ENTRIES = Number(opts.entries);
const SAMPLES = Number(opts.samples);
const DAYS = 90;
const BATCH = 2000;
const PRINCIPAL = 'local'; // the corpus's lines name no principal: they are the local operator's

/** Every line of the daily files, through the store's own batch path, one INSERT in flight while the next is built. */
async function load(store, logDir) {
  await store.migrate(LOG_COMPONENT, LOG_MIGRATIONS);
  // A bulk load builds the secondary indexes once, after the rows (as pg_restore does).
  const indexes = await store.query(
    `SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'codexec_log_executions'
     AND indexname NOT IN ('codexec_log_executions_pkey', 'codexec_log_executions_execution_id_key')`,
  );
  for (const { indexname } of indexes) await store.query(`DROP INDEX ${indexname}`);
  let inFlight = Promise.resolve();
  let lines = [];
  const send = async () => {
    const batch = toBatch(lines, 'bench');
    lines = [];
    await inFlight;
    inFlight = store.transaction((tx) => insertBatch(tx, batch));
  };
  for (const name of readdirSync(logDir).sort()) {
    for await (const line of createInterface({ input: createReadStream(join(logDir, name)) })) {
      if (line === '') continue;
      lines.push(line);
      if (lines.length === BATCH) await send();
    }
  }
  if (lines.length > 0) await send();
  await inFlight;
  await store.transaction(async (tx) => {
    await tx.query("SET LOCAL maintenance_work_mem = '512MB'");
    for (const { indexdef } of indexes) await tx.query(indexdef);
  });
  await store.query('VACUUM ANALYZE codexec_log_executions');
}

const percentile = (sorted, p) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
const fmt = (n) => `${n.toFixed(n < 10 ? 2 : 1)} ms`;

async function time(fn) {
  const t0 = process.hrtime.bigint();
  const value = await fn();
  return { ms: Number(process.hrtime.bigint() - t0) / 1e6, value };
}

async function measure(count, filtersFor, run) {
  const times = [];
  const totals = [];
  for (let i = 0; i < count; i++) {
    const { ms, value } = await time(() => run(filtersFor(i)));
    times.push(ms);
    totals.push(value.total_count);
  }
  times.sort((a, b) => a - b);
  return { p50: percentile(times, 50), p99: percentile(times, 99), totals };
}

const home = mkdtempSync(join(tmpdir(), 'codexec-bench-logs-pg-'));
const logDir = join(home, 'logs');
let cluster;
try {
  console.log(
    `codexec log search, PostgreSQL beside SQLite: ${ENTRIES.toLocaleString('en')} entries, ${DAYS} daily files`,
  );
  await generate(logDir, ENTRIES, DAYS);
  const bytes = readdirSync(logDir).reduce((sum, name) => sum + statSync(join(logDir, name)).size, 0);
  console.log(`  generated JSONL          ${(bytes / 1e6).toFixed(0)} MB`);

  const retentionDays = { success: 36500, failure: 36500, session: 36500 };
  const sqlite = new ExecutionLogs({ logDir, indexPath: join(home, 'index.db'), retentionDays });
  const built = await time(() => sqlite.search({ limit: 1 }));
  console.log(
    `  SQLite index build       ${(built.ms / 1000).toFixed(1)} s, index.db ${(statSync(join(home, 'index.db')).size / 1e6).toFixed(0)} MB`,
  );

  // A modest cache, as a small server's.
  cluster = await startPostgres({ settings: ['shared_buffers=512MB', 'full_page_writes=off'] });
  const store = new Postgres(cluster.url);
  const loaded = await time(() => load(store, logDir));
  const [size] = await store.query(
    "SELECT pg_total_relation_size('codexec_log_executions') AS total, pg_relation_size('codexec_log_executions_words') AS gin",
  );
  console.log(
    `  PostgreSQL load          ${(loaded.ms / 1000).toFixed(1)} s (${Math.round(ENTRIES / (loaded.ms / 1000)).toLocaleString('en')} entries/s), ` +
      `table + indexes ${(size.total / 1e6).toFixed(0)} MB (GIN ${(size.gin / 1e6).toFixed(0)} MB)`,
  );
  // An empty log dir: the pg history reads only the database.
  const pg = new PgExecutionLogs({ logDir: join(home, 'pg-logs'), store, replica: 'bench', retentionDays });

  const terms = [
    'pandas',
    'ModuleNotFoundError',
    'requests status_code',
    VOCAB[5000],
    VOCAB[15000],
    'ZeroDivision',
  ];
  const statuses = ['failed', 'timeout', 'success'];
  const shapes = [
    ['query (6 terms)', (i) => ({ query: terms[i % terms.length], limit: 20 })],
    ...terms.map((term) => [`query "${term}"`, () => ({ query: term, limit: 20 })]),
    ['status', (i) => ({ status: statuses[i % 3], limit: 20 })],
    [
      'lang+status+query+since',
      (i) => ({ language: 'python', status: 'failed', query: terms[i % 2], since: '2026-02-15', limit: 20 }),
    ],
    ['status+since', (i) => ({ status: statuses[i % 3], since: '2026-02-15', limit: 20 })],
    [
      'session',
      (i) => ({ session_id: `sess_${((i * 7919) % 5000).toString(16).padStart(12, '0')}`, limit: 20 }),
    ],
    ['no filter', () => ({ limit: 20 })],
  ];
  // Everyone's (the operator's CLI, as bench/log-search.mjs), then one principal's (what a tool asks).
  for (const principal of [undefined, PRINCIPAL]) {
    const who = principal === undefined ? 'everyone (CLI)' : `principal "${principal}" (tools)`;
    console.log(
      `\n  search: ${who.padEnd(23)} SQLite p50   p99        PostgreSQL p50   p99      pg/sqlite p50  p99`,
    );
    for (const [label, filtersFor] of shapes) {
      const n = label.startsWith('query "') ? Math.max(20, SAMPLES / 10) : SAMPLES;
      const a = await measure(n, filtersFor, (f) => sqlite.search(f, principal));
      const b = await measure(n, filtersFor, (f) => pg.search(f, principal));
      const same = a.totals.every((total, i) => total === b.totals[i]);
      console.log(
        `  ${label.padEnd(30)} ${fmt(a.p50).padStart(10)} ${fmt(a.p99).padStart(10)}   ${fmt(b.p50).padStart(12)} ${fmt(b.p99).padStart(10)}   ` +
          `${(b.p50 / a.p50).toFixed(1).padStart(8)}x ${(b.p99 / a.p99).toFixed(1).padStart(6)}x${same ? '' : '   TOTALS DIFFER'}`,
      );
    }
  }
  if (opts.explain) {
    // --explain 'pandas': PostgreSQL's plan for that query, with the settings pgSearch uses (one
    // principal in the log: no principal filter, as pgSearch leaves it out).
    const terms = termTokens([opts.explain]);
    const { sql, params } = searchStatement({ query: opts.explain, limit: 20 }, undefined, terms);
    const plan = await store.transaction(async (tx) => {
      await tx.query("SELECT set_config('jit', 'off', true), set_config('work_mem', '32MB', true)");
      return tx.query(`EXPLAIN (ANALYZE, BUFFERS) ${sql}`, params);
    });
    console.log(`\n${plan.map((row) => row['QUERY PLAN']).join('\n')}`);
  }
  await sqlite.close();
  await pg.close();
  await store.close();
} finally {
  await cluster?.stop();
  if (opts.keep) console.log(`\n  kept ${home}`);
  else rmSync(home, { recursive: true, force: true });
}
