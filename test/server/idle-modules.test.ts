// What an idle stdio server holds in memory: through its first run it loads none of the modules
// only other commands, serve --http, code mode's downstream servers or shell code need; each is
// loaded on first use instead (bench/idle-rss.mjs measures what that saves). Read from the module
// loader itself: a hook (node --import) logs every module the server resolves or requires.
import { rmSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { startHttp } from '../helpers/http.js';
import { SANDBOX_MODE } from '../helpers/mode.js';
import { logEnv, logged } from '../helpers/module-log.js';
import { callTool, startServer, tempDir } from '../helpers/server.js';

/**
 * Loaded on first use only: the other commands, HTTP, the egress proxy, the MCP client SDK, the
 * parsers, the postgres stores.
 */
const LAZY: readonly RegExp[] = [
  /\/dist\/cli\/(run|setup|doctor|doctor-sandbox|doctor-store|image|logs|audit|wrappers)\.js$/,
  /\/dist\/server\/http\//,
  /\/node_modules\/@modelcontextprotocol\/client\//,
  // The server SDK's JSON Schema validator (ajv): an elicitation's answer is the first it checks.
  /\/node_modules\/@modelcontextprotocol\/server\/dist\/(ajvProvider-|validators\/)/,
  /\/node_modules\/web-tree-sitter\//,
  /\/node_modules\/jsonc-parser\//,
  /\/node_modules\/smol-toml\//,
  // The command-line parser: the bare `serve` an MCP client starts goes around it.
  /\/node_modules\/commander\//,
  /\/dist\/cli\/program\.js$/,
  // The egress proxy (and node:http with it): only CODEXEC_NETWORK=allowlist opens a lane.
  /\/dist\/egress\/(proxy|forward|tunnel|answer|admit|intercept)\.js$/,
  // CODEXEC_CREDENTIALS's certificates: made with the first intercepted connection.
  /\/node_modules\/node-forge\//,
  // The execution log's index: runs write the JSONL; a search opens the index.
  /\/node_modules\/better-sqlite3\//,
  // The records' postgres stores: only CODEXEC_STORE=postgres://… loads them (records/open.ts).
  /\/dist\/records\/postgres\.js$/,
  /\/dist\/(logs|audit)\/postgres\//,
  /\/dist\/(library|quotas|tasks)\/postgres\.js$/,
  // The backends of the modes not in use (the registry loads the one picked).
  /\/dist\/sandbox\/container\//,
  ...(SANDBOX_MODE === 'landlock' ? [] : [/\/dist\/sandbox\/landlock\//]),
];

describe('an idle stdio server loads only what it uses', () => {
  it('through a python run: none of the lazy modules; a bash run then loads the shell parser', async () => {
    const dir = tempDir();
    const { path, env } = logEnv(dir);
    const server = await startServer({ env });
    try {
      const run = await callTool(server.client, 'execute_code', { language: 'python', code: 'print(1)' });
      expect(run.value.stdout).toBe('1\n');
      const modules = logged(path);
      expect(modules.some((url) => url.endsWith('/dist/cli/serve.js'))).toBe(true); // the hook saw the server
      expect(modules.filter((url) => LAZY.some((lazy) => lazy.test(url)))).toEqual([]);

      // Loaded on first use, and it works: shell code goes through the policy's parser. (The
      // run lasts past the moment an open index would take in the python run's line.)
      const bash = await callTool(server.client, 'execute_code', {
        language: 'bash',
        code: 'sleep 0.5; echo $((1+1))',
      });
      expect(bash.value.stdout).toBe('2\n');
      expect(logged(path).some((url) => url.includes('/node_modules/web-tree-sitter/'))).toBe(true);
      expect(logged(path).some((url) => url.includes('/node_modules/better-sqlite3/'))).toBe(false);
      // The first search opens the index, which catches up with both runs.
      const found = await callTool<{ total_count: number }>(server.client, 'search_execution_logs', {});
      expect(found.value.total_count).toBe(2);
      expect(logged(path).some((url) => url.includes('/node_modules/better-sqlite3/'))).toBe(true);
    } finally {
      await server.close();
    }
    rmSync(dir, { recursive: true, force: true });
  }, 60_000);

  it('serve --http loads the HTTP server, and still no other command', async () => {
    const dir = tempDir();
    const { path, env } = logEnv(dir);
    const server = await startHttp({ env });
    await server.stop();
    const modules = logged(path);
    expect(modules.some((url) => url.endsWith('/dist/server/http/serve.js'))).toBe(true);
    expect(
      modules.filter((url) => /\/dist\/cli\/(run|setup|doctor|image|logs|audit)\.js$/.test(url)),
    ).toEqual([]);
    rmSync(dir, { recursive: true, force: true });
    rmSync(server.home, { recursive: true, force: true });
  }, 60_000);
});
