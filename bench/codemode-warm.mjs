// Code mode's cost to a warm run that makes no call (with downstream servers configured,
// every run has discovery, and warm runs must keep their speed). A warm one-shot print(1) /
// console.log(1), over MCP stdio, paced as an agent's calls are, alternated run by run between:
//   base      another build (--base DIST_CLI, e.g. one of the commit before) with the fixture
//             server configured,
//   no-mcp    this build without downstream servers (nothing changes there),
//   code-mode this build with the fixture server configured (helpers and channel in every run).
// Usage: node bench/codemode-warm.mjs [--base /path/to/dist/cli.js] [--n 150]
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { CLI, ms } from './lib.mjs';

const arg = (name) => {
  const at = process.argv.indexOf(name);
  return at === -1 ? undefined : process.argv[at + 1];
};
const base = arg('--base') && resolve(arg('--base'));
const N = Number(arg('--n') ?? 150);
const PACE_MS = 100;
const FIXTURE = new URL('../test/fixtures/mcp/tools-server.mjs', import.meta.url).pathname;
const dir = mkdtempSync(join(tmpdir(), 'codexec-bench-cmwarm-'));
const config = join(dir, 'mcp.json');
writeFileSync(config, JSON.stringify({ mcpServers: { fx: { command: process.execPath, args: [FIXTURE] } } }));

async function start(cli, env) {
  const home = mkdtempSync(join(dir, 'home-'));
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [cli, 'serve'],
    env: { PATH: process.env.PATH, HOME: home, LANG: 'C.UTF-8', CODEXEC_HOME: home, ...env },
    stderr: 'ignore',
  });
  const client = new Client({ name: 'bench', version: '1.0.0' });
  await client.connect(transport);
  return client;
}

const mode = { CODEXEC_SANDBOX_MODE: 'namespace', CODEXEC_POOL_SIZE: '2' };
const servers = {
  ...(base && { base: await start(base, { ...mode, CODEXEC_MCP_CONFIG: config }) }),
  'no-mcp': await start(CLI, mode),
  'code-mode': await start(CLI, { ...mode, CODEXEC_MCP_CONFIG: config }),
};
const PRINT1 = { python: 'print(1)', node: 'console.log(1)' };
const pause = (msecs) => new Promise((done) => setTimeout(done, msecs));
const pick = (sorted, q) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
for (const language of ['python', 'node']) {
  // Round by round, each server in turn, the order rotated: all see the same phases of a noisy
  // machine. A run the
  // pool could not serve warm (its refill late under load) is counted, not timed.
  const times = Object.fromEntries(Object.keys(servers).map((name) => [name, []]));
  const cold = Object.fromEntries(Object.keys(servers).map((name) => [name, 0]));
  for (let round = -10; round < N; round++) {
    // Each round starts with the next server: none is always first after the pause.
    const entries = Object.entries(servers);
    const shift = (round + entries.length * 10) % entries.length;
    for (const [name, client] of [...entries.slice(shift), ...entries.slice(0, shift)]) {
      await pause(PACE_MS);
      const started = performance.now();
      const result = await client.callTool({
        name: 'execute_code',
        arguments: { language, code: PRINT1[language] },
      });
      const elapsed = performance.now() - started;
      const value = result.structuredContent;
      if (value.stdout !== '1\n') throw new Error(`${name}: ${JSON.stringify(value)}`);
      if (round < 0) continue; // warm-up
      if (value.warm) times[name].push(elapsed);
      else cold[name] += 1;
    }
  }
  for (const [name, list] of Object.entries(times)) {
    const sorted = [...list].sort((x, y) => x - y);
    console.log(
      `${language} warm print(1) ${name.padEnd(9)} p50 ${ms(pick(sorted, 0.5))} ms  p90 ${ms(pick(sorted, 0.9))} ms  ` +
        `(n=${sorted.length} warm, ${cold[name]} went cold)`,
    );
  }
}
for (const client of Object.values(servers)) await client.close();
rmSync(dir, { recursive: true, force: true });
