// send_to_session round trip for `x += 1` over MCP stdio, against the same driver loop driven
// directly (no MCP, no server): p50/p99 and the ratio. Target: MCP p50 under 2 ms.
//
//   npm run build && node bench/session-send.mjs [--n 1000] [--languages python,node,typescript,bash]
//
// The server runs with its default sandbox mode (override with CODEXEC_SANDBOX_MODE); the
// baseline spawns the driver as a plain child with the control channel on fd 3.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';

const root = resolve(import.meta.dirname, '..');
const { values } = parseArgs({
  options: {
    n: { type: 'string', default: '1000' },
    languages: { type: 'string', default: 'python,node,typescript,bash' },
  },
});
const N = Number(values.n);
const WARMUP = 100;

const CELLS = {
  python: { setup: 'x = 0', step: 'x += 1', driver: ['python3', 'drivers/python_driver.py'] },
  node: {
    setup: 'var x = 0',
    step: 'x += 1',
    driver: [process.execPath, '--expose-internals', 'drivers/node_driver.mjs'],
  },
  typescript: { setup: 'var x: number = 0', step: 'x += 1', driver: null },
  bash: { setup: 'x=0', step: 'x=$((x + 1))', driver: ['bash', 'drivers/bash_driver.sh'] },
};

function stats(samples) {
  const sorted = [...samples].sort((a, b) => a - b);
  const at = (q) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
  return { p50: at(0.5), p99: at(0.99) };
}

async function timeLoop(run) {
  for (let i = 0; i < WARMUP; i++) await run();
  const samples = [];
  for (let i = 0; i < N; i++) {
    const t = process.hrtime.bigint();
    await run();
    samples.push(Number(process.hrtime.bigint() - t) / 1e6);
  }
  return stats(samples);
}

/** The driver alone: frames on fd 3, exactly what the server writes and reads. */
async function direct(argv, setup, step) {
  const child = spawn(argv[0], argv.slice(1), {
    cwd: mkdtempSync(join(tmpdir(), 'codexec-bench-')),
    stdio: ['pipe', 'pipe', 'pipe', 'pipe'],
    env: { PATH: process.env.PATH, PYTHONUNBUFFERED: '1' },
  });
  const control = child.stdio[3];
  child.stdout.resume();
  child.stderr.resume();
  let buffer = Buffer.alloc(0);
  let waiter;
  control.on('data', (chunk) => {
    buffer = Buffer.concat([buffer, chunk]);
    for (;;) {
      const nl = buffer.indexOf(10);
      if (nl < 0) return;
      const size = Number(buffer.subarray(0, nl).toString());
      if (buffer.length < nl + 1 + size) return;
      const message = JSON.parse(buffer.subarray(nl + 1, nl + 1 + size).toString());
      buffer = buffer.subarray(nl + 1 + size);
      waiter?.(message);
    }
  });
  const next = () => new Promise((resolve) => (waiter = resolve));
  await next(); // ready
  let id = 0;
  const exec = async (code) => {
    const body = Buffer.from(JSON.stringify({ type: 'exec', id: `exec_${id++}`, code }));
    const done = next();
    control.write(Buffer.concat([Buffer.from(`${body.length}\n`), body]));
    return done;
  };
  await exec(setup);
  const result = await timeLoop(() => exec(step));
  child.kill('SIGKILL');
  return result;
}

async function overMcp(client, language, setup, step) {
  const call = async (name, args) => {
    const result = await client.callTool({ name, arguments: args });
    if (result.isError || result.structuredContent?.success === false)
      throw new Error(`${name} failed: ${JSON.stringify(result.structuredContent)}`);
    return result.structuredContent;
  };
  const { session_id, sandbox_mode } = await call('start_session', { language });
  await call('send_to_session', { session_id, code: setup });
  const result = await timeLoop(() => call('send_to_session', { session_id, code: step }));
  const last = await call('send_to_session', { session_id, code: language === 'bash' ? 'echo $x' : 'x' });
  await call('close_session', { session_id });
  return { ...result, sandbox_mode, check: last.stdout.trim() };
}

const home = mkdtempSync(join(tmpdir(), 'codexec-bench-home-'));
const transport = new StdioClientTransport({
  command: process.execPath,
  args: [join(root, 'dist/cli.js'), 'serve'],
  env: {
    PATH: process.env.PATH,
    HOME: process.env.HOME ?? home,
    CODEXEC_HOME: home,
    ...pick('CODEXEC_SANDBOX_MODE'),
  },
  stderr: 'inherit',
});
const client = new Client({ name: 'codexec-bench', version: '1.0.0' });
await client.connect(transport);

const fmt = (ms) => `${ms.toFixed(3)} ms`;
console.log(`send_to_session round trip, ${N} sends after ${WARMUP} warm-up (p50 / p99)`);
try {
  for (const language of values.languages.split(',')) {
    const cell = CELLS[language];
    if (!cell) throw new Error(`unknown language ${language}`);
    const mcp = await overMcp(client, language, cell.setup, cell.step);
    const argv = (cell.driver ?? CELLS.node.driver).map((part) =>
      part.startsWith('drivers/') ? join(root, part) : part,
    );
    const base = await direct(argv, cell.setup, cell.step);
    const expected = String(WARMUP + N);
    console.log(
      `${language.padEnd(10)} MCP (${mcp.sandbox_mode}) ${fmt(mcp.p50)} / ${fmt(mcp.p99)}   ` +
        `driver only ${fmt(base.p50)} / ${fmt(base.p99)}   ratio p50 ${(mcp.p50 / base.p50).toFixed(1)}x   ` +
        `target p50 < 2 ms: ${mcp.p50 < 2 ? 'met' : 'MISSED'}${mcp.check === expected ? '' : `   (x = ${mcp.check}, expected ${expected}!)`}`,
    );
  }
} finally {
  await client.close();
  rmSync(home, { recursive: true, force: true });
}

function pick(name) {
  return process.env[name] ? { [name]: process.env[name] } : {};
}
