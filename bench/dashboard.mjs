// The dashboard's cost to serve --http: idle RSS of a server with the dashboard present but never
// opened, against a build without it (--base <dir with dist/cli.js>, e.g. the commit before the
// dashboard built elsewhere), alternated start by start in the same run; RSS once the page and
// its API were used; and the page's weight (HTML + JS + CSS, raw and gzipped as served).
// Usage: npm run build && node bench/dashboard.mjs --base /tmp/codexec-base [--rounds 5]
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { gzipSync } from 'node:zlib';
import { CLI, rssMb } from './lib.mjs';

const arg = (name, fallback) => {
  const index = process.argv.indexOf(name);
  return index >= 0 ? process.argv[index + 1] : fallback;
};
const base = arg('--base');
const rounds = Number(arg('--rounds', '5'));
const IDLE_MS = 3000;
const TOKEN = 'bench-token-0123456789abcdef';

async function idleRss(cli, openDashboard) {
  const home = mkdtempSync(join(tmpdir(), 'codexec-bench-'));
  const child = spawn(process.execPath, [cli, 'serve', '--http', '--port', '0'], {
    env: { PATH: process.env.PATH, HOME: process.env.HOME, CODEXEC_HOME: home, CODEXEC_HTTP_TOKEN: TOKEN },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  try {
    const url = await new Promise((done, fail) => {
      child.stderr.on('data', (chunk) => {
        stderr += chunk;
        const match = /listening on (http:\/\/\S+)/.exec(stderr);
        if (match) done(match[1]);
      });
      child.once('exit', (code) => fail(new Error(`server exited ${code}: ${stderr}`)));
    });
    if (openDashboard) {
      const root = new URL('/', url);
      const html = await (await fetch(root)).text();
      for (const asset of html.match(/\/assets\/[^"]+/g) ?? [])
        await (await fetch(new URL(asset, root))).text();
      const auth = { headers: { authorization: `Bearer ${TOKEN}` } };
      for (const api of ['/api/me', '/api/health', '/api/sessions', '/api/logs?query=x'])
        await (await fetch(new URL(api, root), auth)).text();
    }
    await new Promise((done) => setTimeout(done, IDLE_MS));
    return rssMb(child.pid);
  } finally {
    child.kill('SIGTERM');
    await new Promise((done) => (child.exitCode === null ? child.once('exit', done) : done()));
    rmSync(home, { recursive: true, force: true });
  }
}

const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
const results = { before: [], after: [], opened: [] };
for (let round = 0; round < rounds; round++) {
  // Alternated: drift on a shared machine touches both sides alike.
  if (base) results.before.push(await idleRss(resolve(base, 'dist/cli.js'), false));
  results.after.push(await idleRss(CLI, false));
  results.opened.push(await idleRss(CLI, true));
}
const show = (values) =>
  `median ${median(values).toFixed(1)} MB [${values.map((v) => v.toFixed(1)).join(', ')}]`;
if (base) console.log(`idle RSS, without the dashboard (${base}): ${show(results.before)}`);
console.log(`idle RSS, dashboard present, unused:  ${show(results.after)}`);
console.log(`RSS after the page and its API were used: ${show(results.opened)}`);
if (base)
  console.log(`idle growth: ${(median(results.after) - median(results.before)).toFixed(1)} MB (limit 10 MB)`);

const assets = resolve(import.meta.dirname, '../dist/web/assets');
let raw = 0;
let gzipped = 0;
for (const name of ['index.html', 'app.js', 'app.css']) {
  const bytes = readFileSync(join(assets, name));
  const packed = gzipSync(bytes, { level: 9 }).length;
  raw += bytes.length;
  gzipped += packed;
  console.log(`${name}: ${bytes.length} B, ${packed} B gzipped`);
}
console.log(`page weight: ${raw} B, ${gzipped} B gzipped`);
