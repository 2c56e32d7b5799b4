// Scale-out (not part of npm test): runs/s and p50/p99 of python `print(1)` one-shots at
// concurrency 8 through HAProxy (the shipped deploy/haproxy.cfg) over 1, 2 and 3 replicas that
// share a throwaway PostgreSQL (CODEXEC_STORE) and one approval key, beside the same load sent to
// one replica directly (no HAProxy): the baseline, measured in the same run. Rows are measured in
// rounds (direct, 1, 2, 3, direct, 1, …) so each sees the same phases of a noisy machine. On a
// 2-core machine more replicas cannot add CPU: the point is that it works and what a hop costs.
// Each client speaks the 2026-07-28 era (stateless; HAProxy balances every request). Also printed:
// the share of warm runs, requests per replica, and from HAProxy's log where a request's time went
// (HAProxy's own queue + connect against the replica's time to answer).
// Usage: npm run build && node bench/scale-out.mjs [--runs N] [--rounds R] [--concurrency C]
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import pg from 'pg';
import { approvalKeyFile, startHaproxy, startPostgres, startReplica } from './cluster.mjs';
import { ms } from './lib.mjs';

const arg = (name, fallback) => {
  const i = process.argv.indexOf(name);
  return i === -1 ? fallback : Number(process.argv[i + 1]);
};
const runs = arg('--runs', 400); // per row, over all rounds
const rounds = arg('--rounds', 2);
const concurrency = arg('--concurrency', 8);
const TOKEN = 'bench-scale-out-token-0123456789';
const RUN = { name: 'execute_code', arguments: { language: 'python', code: 'print(1)' } };

async function clientsFor(url) {
  return await Promise.all(
    Array.from({ length: concurrency }, async () => {
      const transport = new StreamableHTTPClientTransport(new URL(url), {
        requestInit: { headers: { authorization: `Bearer ${TOKEN}` } },
      });
      const client = new Client(
        { name: 'codexec-bench', version: '1.0.0' },
        { versionNegotiation: { mode: { pin: '2026-07-28' } } },
      );
      await client.connect(transport);
      return client;
    }),
  );
}

/** `n` runs over the row's clients, one worker per client; latencies pushed onto `row`. */
async function measureInto(row, n) {
  let next = 0;
  const started = performance.now();
  await Promise.all(
    row.clients.map(async (client) => {
      while (next < n) {
        next++;
        const t = performance.now();
        const result = await client.callTool(RUN, { timeout: 120_000 });
        row.latencies.push(performance.now() - t);
        if (result.isError || result.structuredContent?.stdout !== '1\n') row.failures++;
        if (result.structuredContent?.warm === true) row.warm++;
      }
    }),
  );
  row.wallMs += performance.now() - started;
  row.runs += n;
}

const db = await startPostgres();
const key = approvalKeyFile();
const env = {
  CODEXEC_STORE: db.url,
  CODEXEC_APPROVAL_KEY_FILE: key.file,
  CODEXEC_HTTP_TOKEN: TOKEN,
  CODEXEC_HTTP_KEEP_ALIVE_TIMEOUT_MS: '65000',
};
const replicas = [];
const proxies = [];
const rows = [];
try {
  // One at a time: the first replica's migrations run before the others start.
  for (let i = 0; i < 3; i++) replicas.push(await startReplica(env));
  for (let n = 1; n <= 3; n++) proxies.push(await startHaproxy(replicas.slice(0, n).map((r) => r.hostPort)));
  const targets = [
    { name: 'direct, 1 replica', url: replicas[0].url },
    ...proxies.map((proxy, i) => ({
      name: `HAProxy, ${i + 1} replica${i ? 's' : ''}`,
      url: proxy.url,
      proxy,
    })),
  ];
  for (const target of targets) {
    const row = {
      ...target,
      clients: await clientsFor(target.url),
      latencies: [],
      wallMs: 0,
      runs: 0,
      failures: 0,
      warm: 0,
    };
    // Warm up: every replica behind it starts its warm pool for python.
    await Promise.all(row.clients.map((client) => client.callTool(RUN)));
    await Promise.all(row.clients.map((client) => client.callTool(RUN)));
    rows.push(row);
  }
  await new Promise((done) => setTimeout(done, 500)); // the warm-up's last log lines
  const before = proxies.map((proxy) => proxy.served());
  const timedBefore = proxies.map((proxy) => proxy.timings().length);
  for (let round = 0; round < rounds; round++)
    for (const row of rows) await measureInto(row, Math.ceil(runs / rounds));

  await new Promise((done) => setTimeout(done, 500)); // the last requests' log lines
  const stats = rows.map((row) => {
    const sorted = [...row.latencies].sort((a, b) => a - b);
    const pick = (q) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
    return { row, perSecond: (row.runs / row.wallMs) * 1000, p50: pick(0.5), p99: pick(0.99) };
  });
  const base = stats[0];
  console.log(
    `python print(1) one-shots, ${runs} per row at concurrency ${concurrency}, ${rounds} alternated rounds; replicas over one PostgreSQL (CODEXEC_STORE)`,
  );
  console.log(
    'row                   runs/s   p50 ms   p99 ms   runs/s ×   p50 ×   failures   warm   requests per replica',
  );
  for (const { row, perSecond, p50, p99 } of stats) {
    const i = row.proxy ? proxies.indexOf(row.proxy) : -1;
    const spread = i === -1 ? '-' : spreadOf(before[i], row.proxy.served());
    console.log(
      `${row.name.padEnd(20)} ${perSecond.toFixed(1).padStart(7)} ${ms(p50).padStart(8)} ${ms(p99).padStart(8)} ${(perSecond / base.perSecond).toFixed(2).padStart(10)} ${(p50 / base.p50).toFixed(2).padStart(7)} ${String(row.failures).padStart(10)} ${`${Math.round((100 * row.warm) / row.runs)}%`.padStart(6)}   ${spread}`,
    );
  }
  // Where HAProxy saw the time go: its own part (queue + connect) against the replica's answer.
  console.log(
    "HAProxy log, measured requests: p50/p99/max of queue+connect ms | of the replica's time to answer ms",
  );
  proxies.forEach((proxy, i) => {
    const own = proxy.timings().slice(timedBefore[i]);
    const q = (values) => {
      const sorted = values.sort((a, b) => a - b);
      const at = (f) => sorted[Math.min(sorted.length - 1, Math.floor(f * sorted.length))];
      return `${at(0.5)}/${at(0.99)}/${sorted.at(-1)}`;
    };
    console.log(
      `  ${i + 1} replica${i ? 's' : ' '}: ${q(own.map((t) => t.queue + t.connect)).padEnd(10)} | ${q(own.map((t) => t.response))}`,
    );
  });
  console.log(`replicas registered in PostgreSQL (codexec_replicas): ${await registered(db.url)}`);
  process.exitCode = rows.some((row) => row.failures > 0) ? 1 : 0;
} finally {
  for (const row of rows) await Promise.all(row.clients.map((client) => client.close()));
  for (const proxy of proxies) await proxy.stop();
  for (const replica of replicas) await replica.stop();
  await db.stop();
  key.remove();
}

/** Requests each server answered during the measurement (warm-up excluded). */
function spreadOf(before, after) {
  return Object.entries(after)
    .map(([server, count]) => `${server} ${count - (before[server] ?? 0)}`)
    .join(', ');
}

/** Rows of the replica table: the replicas did use the shared store. */
async function registered(url) {
  const client = new pg.Client({ connectionString: url });
  try {
    await client.connect();
    const { rows } = await client.query('SELECT count(*)::int AS n FROM codexec_replicas');
    return String(rows[0].n);
  } catch (error) {
    return `none (${error.message})`;
  } finally {
    await client.end().catch(() => {});
  }
}
