// serve --http against stdio: p50/p99 of a small warm run (node console.log(1)), paced 100 ms
// apart as an agent calls, and of tools/list, over one stdio server and one HTTP server of the
// same build, alternated call by call (HTTP in both eras: 2025 stateless and 2026 per-request);
// runs/s with 20 HTTP clients at once; and the HTTP server's RSS after N requests (a fresh
// McpServer is built per HTTP request, so growth would show a leak). Run `npm run build`.
// Usage: node bench/http.mjs [--quick]
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { CLI, interleave, measure, ms, rssMb, startServer } from './lib.mjs';

const quick = process.argv.includes('--quick');
const N = quick ? 40 : 200;
const TOKEN = 'bench-token-0123456789abcdef';

async function startHttp() {
  const home = mkdtempSync(join(tmpdir(), 'codexec-bench-'));
  const child = spawn(process.execPath, [CLI, 'serve', '--http', '--port', '0'], {
    env: { PATH: process.env.PATH, HOME: process.env.HOME, CODEXEC_HOME: home, CODEXEC_HTTP_TOKEN: TOKEN },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  const url = await new Promise((resolve, reject) => {
    child.stderr.on('data', (chunk) => {
      stderr += chunk;
      const match = /listening on (http:\/\/\S+)/.exec(stderr);
      if (match) resolve(match[1]);
    });
    child.once('exit', (code) => reject(new Error(`server exited ${code}: ${stderr}`)));
  });
  return {
    url,
    pid: child.pid,
    async stop() {
      child.kill('SIGTERM');
      await new Promise((resolve) => child.once('exit', resolve));
      rmSync(home, { recursive: true, force: true });
    },
  };
}

async function httpClient(url, era) {
  const transport = new StreamableHTTPClientTransport(new URL(url), {
    requestInit: { headers: { authorization: `Bearer ${TOKEN}` } },
  });
  const options = era === 'modern' ? { versionNegotiation: { mode: { pin: '2026-07-28' } } } : {};
  const client = new Client({ name: 'codexec-bench', version: '1.0.0' }, options);
  await client.connect(transport);
  return client;
}

const RUN = { name: 'execute_code', arguments: { language: 'node', code: 'console.log(1)' } };
const stdio = await startServer({ CODEXEC_POOL_SIZE: '2' });
const http = await startHttp();
const legacy = await httpClient(http.url, 'legacy');
const modern = await httpClient(http.url, 'modern');
try {
  const runs = await interleave(
    {
      stdio: () => stdio.client.callTool(RUN),
      'http 2025': () => legacy.callTool(RUN),
      'http 2026': () => modern.callTool(RUN),
    },
    { n: Math.ceil(N / 2), gapMs: 100 },
  );
  const lists = await interleave(
    {
      stdio: () => stdio.client.listTools(),
      'http 2025': () => legacy.listTools(),
      'http 2026': () => modern.listTools(),
    },
    { n: N * 5 },
  );
  console.log(
    `node console.log(1), warm, paced 100 ms, n=${Math.ceil(N / 2)} each, alternated; tools/list n=${N * 5}`,
  );
  console.log('transport   run p50   run p99   list p50   list p99  (ms)');
  for (const name of Object.keys(runs)) {
    const r = runs[name];
    const l = lists[name];
    console.log(
      `${name.padEnd(10)} ${ms(r.p50).padStart(8)} ${ms(r.p99).padStart(9)} ${ms(l.p50).padStart(10)} ${ms(l.p99).padStart(10)}`,
    );
  }
  // 20 clients at once, each with its own connection (2026 era), as many agents sharing a server.
  const clients = await Promise.all(Array.from({ length: 20 }, () => httpClient(http.url, 'modern')));
  let turn = 0;
  const many = await measure(() => clients[turn++ % clients.length].callTool(RUN), {
    n: N * 2,
    concurrency: 20,
  });
  console.log(`20 HTTP clients at once: ${many.perSecond.toFixed(1)} runs/s, p50 ${ms(many.p50)} ms`);
  await Promise.all(clients.map((client) => client.close()));
  const before = rssMb(http.pid);
  for (let i = 0; i < N * 10; i++) await legacy.listTools();
  const after = rssMb(http.pid);
  for (let i = 0; i < N * 10; i++) await legacy.listTools();
  const later = rssMb(http.pid);
  console.log(
    `HTTP server RSS: ${before} MB, after ${N * 10} more requests ${after} MB, after ${N * 20} ${later} MB`,
  );
} finally {
  await legacy.close();
  await modern.close();
  await stdio.close();
  await http.stop();
}
