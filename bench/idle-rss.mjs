#!/usr/bin/env node
// Idle memory of a fresh `codexec serve` over stdio after its first run (python `print(1)`): the
// server's VmRSS 5 s and 30 s after the run, beside two floors measured in the same run: an idle
// bare `node -e` (what any Node server costs before it loads a line of its own), and a one-tool
// MCP server on the official SDK (bench/fixtures/sdk-one-tool.mjs: McpServer, stdio, a zod input
// schema, codexec's young-generation sizing), once as plain ESM and once bundled and minified by
// esbuild (what the SDK and zod cost even when bundled), each after its first call. Each codexec
// server is started the way users start it: `node dist/cli.js serve`, and the bin itself (its
// shebang), which is what the npm shim runs. --base adds another build's dist/cli.js, started the
// same ways.
// Usage: npm run build && node bench/idle-rss.mjs [--base /path/to/dist/cli.js] [--rounds 3]
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { CLI, rssMb, sdkOneTool } from './lib.mjs';

const arg = (name) => {
  const at = process.argv.indexOf(name);
  return at === -1 ? undefined : process.argv[at + 1];
};
const ROUNDS = Number(arg('--rounds') ?? 1);
const MARKS_S = [5, 30];
const pause = (msecs) => new Promise((done) => setTimeout(done, msecs));

/** VmRSS and its parts (MB) from /proc: anonymous memory is the heap; file pages are code. */
function memory(pid) {
  const rollup = readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8');
  const field = (name) =>
    Number(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(rollup)?.[1] ?? Number.NaN) / 1024;
  return { rss: rssMb(pid), anon: field('Anonymous'), file: rssMb(pid, 'RssFile') };
}

function shebang(file) {
  const line = readFileSync(file, 'utf8').split('\n', 1)[0];
  if (!line.startsWith('#!')) throw new Error(`${file} has no shebang line`);
  return line.slice(2).trim().split(/\s+/);
}

/** Idle bare node: the floor. */
async function floor() {
  const child = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1 << 30)'], {
    env: { PATH: process.env.PATH, LANG: 'C.UTF-8' }, // as the servers': no inherited NODE_* settings
    stdio: 'ignore',
  });
  const marks = [];
  for (const at of MARKS_S) {
    await pause(at * 1000 - (marks.length ? MARKS_S[marks.length - 1] * 1000 : 0));
    marks.push(memory(child.pid));
  }
  child.kill();
  return marks;
}

/** A server started as `node <cli> serve` (how: 'node') or by running <cli> itself (how: 'bin'). */
async function server(cli, how) {
  const home = mkdtempSync(join(tmpdir(), 'codexec-bench-rss-'));
  // The bin as the kernel runs it (npm's shim links to it): its shebang line's command, then the file.
  const [command, ...args] =
    how === 'bin' ? [...shebang(cli), cli, 'serve'] : [process.execPath, cli, 'serve'];
  const transport = new StdioClientTransport({
    command,
    args,
    env: { PATH: process.env.PATH, HOME: home, LANG: 'C.UTF-8', CODEXEC_HOME: home },
    stderr: 'ignore',
  });
  const client = new Client({ name: 'bench-idle-rss', version: '1.0.0' });
  await client.connect(transport);
  const run = await client.callTool({
    name: 'execute_code',
    arguments: { language: 'python', code: 'print(1)' },
  });
  if (run.structuredContent?.stdout !== '1\n') throw new Error(`run failed: ${JSON.stringify(run)}`);
  const marks = [];
  for (const at of MARKS_S) {
    await pause(at * 1000 - (marks.length ? MARKS_S[marks.length - 1] * 1000 : 0));
    marks.push(memory(transport.pid));
  }
  await client.close();
  rmSync(home, { recursive: true, force: true });
  return marks;
}

const builds = [['this', CLI], ...(arg('--base') ? [['base', resolve(arg('--base'))]] : [])];
const sdk = await sdkOneTool();
const rows = [];
for (let round = 0; round < ROUNDS; round++) {
  // All measured side by side: the machine's load at one moment is the same for each.
  const jobs = [['node -e (floor)', floor()]];
  jobs.push(['SDK one tool (floor)', server(sdk.plain, 'node')]);
  jobs.push(['SDK one tool, esbuild bundle (floor)', server(sdk.bundled, 'node')]);
  for (const [name, cli] of builds)
    for (const how of ['node', 'bin'])
      jobs.push([`${name}: ${how === 'bin' ? `${cli} serve` : 'node cli.js serve'}`, server(cli, how)]);
  for (const [label, job] of jobs) rows.push([label, await job]);
}
sdk.close();
const mb = (value) => value.toFixed(1).padStart(6);
console.log(
  `VmRSS MB (anonymous + file-backed) after one python print(1), at ${MARKS_S.join(' s and ')} s; ${ROUNDS} round(s)`,
);
for (const [label, marks] of rows) {
  const text = marks.map((m, i) => `${MARKS_S[i]} s ${mb(m.rss)} (${mb(m.anon)} +${mb(m.file)})`).join(' | ');
  console.log(`${label.padEnd(40)} ${text}`);
}
