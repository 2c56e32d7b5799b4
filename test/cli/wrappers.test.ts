// `codexec wrappers`: typed modules from the downstream servers' tool schemas. The
// TypeScript ones type-check under --strict, the Python ones compile, and both work as they are in
// a code-mode run against the real fixture server.
import { execFileSync, spawnSync } from 'node:child_process';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { baseEnv, CLI, callTool, startServer, tempDir } from '../helpers/server.js';

const FIXTURE = fileURLToPath(new URL('../fixtures/mcp/tools-server.mjs', import.meta.url));
const TSC = fileURLToPath(new URL('../../node_modules/typescript/bin/tsc', import.meta.url));
const home = tempDir();
writeFileSync(
  join(home, 'mcp.json'),
  JSON.stringify({ mcpServers: { fx: { command: process.execPath, args: [FIXTURE] } } }),
);
afterAll(() => rmSync(home, { recursive: true, force: true }));

const generate = (...args: string[]) =>
  spawnSync(process.execPath, [CLI, 'wrappers', '--out', join(home, 'out'), ...args], {
    env: baseEnv(home),
    encoding: 'utf8',
  });

describe('codexec wrappers', () => {
  it('writes a TypeScript module per server that type-checks, and runs in code mode', async () => {
    const made = generate();
    expect(made.status).toBe(0);
    expect(made.stdout).toContain('fx.ts: 6 tools');
    const file = join(home, 'out', 'fx.ts');
    const source = readFileSync(file, 'utf8');
    expect(source).toContain('export type AddArgs = { "a": number; "b": number };');
    execFileSync(process.execPath, [
      TSC,
      '--noEmit',
      '--strict',
      '--skipLibCheck', // the repo's own @types are not what is checked here
      '--target',
      'es2022',
      '--module',
      'es2022',
      file,
    ]);
    const server = await startServer({ home });
    try {
      const { value } = await callTool<{ stdout: string; stderr: string }>(server.client, 'execute_code', {
        language: 'typescript',
        code: `${source}\nconsole.log(await add({ a: 20, b: 22 }));`,
        allowed_tools: ['mcp__fx__*'],
      });
      expect(value.stderr).toBe('');
      expect(value.stdout).toBe('{ sum: 42 }\n');
    } finally {
      await server.close();
    }
  }, 60_000);

  it('writes a Python module that compiles, and runs in code mode', async () => {
    const made = generate('--lang', 'python', '--server', 'fx');
    expect(made.status).toBe(0);
    const file = join(home, 'out', 'fx.py');
    execFileSync('/usr/bin/python3', ['-m', 'py_compile', file]);
    const source = readFileSync(file, 'utf8');
    expect(source).toContain('class AddArgs(TypedDict):');
    const server = await startServer({ home });
    try {
      const { value } = await callTool<{ stdout: string; stderr: string }>(server.client, 'execute_code', {
        language: 'python',
        code: `${source}\nprint(await echo({"text": "typed"}))`,
        allowed_tools: ['mcp__fx__echo'],
      });
      expect(value.stderr).toBe('');
      expect(value.stdout).toBe('typed\n');
    } finally {
      await server.close();
    }
  }, 60_000);

  it('refuses an unknown server, a bad --lang, and a home without servers (exit 2)', () => {
    expect(generate('--server', 'nope').stderr).toContain('no tools from a server named nope');
    expect(generate('--lang', 'rust').status).toBe(2);
    const empty = tempDir();
    const none = spawnSync(process.execPath, [CLI, 'wrappers'], { env: baseEnv(empty), encoding: 'utf8' });
    expect(none.status).toBe(2);
    expect(none.stderr).toContain('no downstream MCP servers');
    rmSync(empty, { recursive: true, force: true });
  });
});
