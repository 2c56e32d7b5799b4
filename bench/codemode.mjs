// Code mode: what a tool call costs from sandboxed code. One namespace-mode server with the
// fixture MCP server (test/fixtures/mcp/tools-server.mjs) as its downstream; inside one run,
// discoverMCPTools() first (the bridge connects and lists) and again (listed once, kept), then N
// callMCPTool('…echo') calls timed in the code; against the same N calls made directly to the
// fixture with the SDK client from this process (the floor: MCP itself). Run `npm run build`.
// Usage: node bench/codemode.mjs [--quick]
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { ms, startServer } from './lib.mjs';

const N = process.argv.includes('--quick') ? 100 : 500;
const FIXTURE = new URL('../test/fixtures/mcp/tools-server.mjs', import.meta.url).pathname;
const dir = mkdtempSync(join(tmpdir(), 'codexec-bench-codemode-'));
const config = join(dir, 'mcp.json');
writeFileSync(config, JSON.stringify({ mcpServers: { fx: { command: process.execPath, args: [FIXTURE] } } }));

const p50 = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];

// The floor: the fixture called directly over stdio from here.
const direct = new Client({ name: 'bench', version: '1.0.0' });
await direct.connect(new StdioClientTransport({ command: process.execPath, args: [FIXTURE] }));
for (let i = 0; i < 20; i++) await direct.callTool({ name: 'echo', arguments: { text: 'x' } });
const floor = [];
for (let i = 0; i < N; i++) {
  const t = performance.now();
  await direct.callTool({ name: 'echo', arguments: { text: 'x' } });
  floor.push(performance.now() - t);
}
await direct.close();

const server = await startServer({
  CODEXEC_SANDBOX_MODE: 'namespace',
  CODEXEC_MCP_CONFIG: config,
  CODEXEC_BRIDGE_RATE_LIMIT: '100000',
});
const code = `
let t = performance.now();
await discoverMCPTools();
const first = performance.now() - t;
t = performance.now();
await discoverMCPTools();
const cached = performance.now() - t;
for (let i = 0; i < 20; i++) await callMCPTool('mcp__fx__echo', { text: 'x' });
const calls = [];
for (let i = 0; i < ${N}; i++) {
  t = performance.now();
  await callMCPTool('mcp__fx__echo', { text: 'x' });
  calls.push(performance.now() - t);
}
console.log(JSON.stringify({ first, cached, calls }));`;
const result = await server.call('execute_code', {
  language: 'node',
  code,
  allowed_tools: ['mcp__fx__echo'],
  timeout_ms: 120000,
});
await server.close();
rmSync(dir, { recursive: true, force: true });
if (!result.success) throw new Error(result.stderr);
const inside = JSON.parse(result.stdout);
console.log(
  `discovery from sandboxed code: first ${ms(inside.first)} ms (connects the server, lists its tools), then ${ms(inside.cached)} ms`,
);
console.log(
  `callMCPTool from sandboxed code p50 ${ms(p50(inside.calls))} ms; the same call straight to the fixture p50 ${ms(p50(floor))} ms; overhead ${ms(p50(inside.calls) - p50(floor))} ms (n=${N})`,
);
