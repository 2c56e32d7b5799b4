// A node or typescript program's file holds the user's code alone: `require`, `__filename` and
// `__dirname` come as globals (drivers/node_program.mjs), so an error points at the user's line
// and column, and its stack shows no frame of Node's loader or of codexec's drivers. Warm runs
// (the pool's drivers) and cold ones (no pool) alike.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { warmReady } from '../helpers/health.js';
import { callTool, startServer, type TestServer } from '../helpers/server.js';

interface Result {
  success: boolean;
  stdout: string;
  stderr: string;
  exit_code: number | null;
  warm: boolean;
}

const SETUPS = [
  ['warm', {}],
  ['cold', { CODEXEC_POOL_SIZE: '0' }],
] as const;

describe.each(SETUPS)('node programs, %s', (kind, env) => {
  let server: TestServer;
  const run = async (language: string, code: string) => {
    if (kind === 'warm') expect(await warmReady(server.client, language)).toBe(true);
    const { value } = await callTool<Result>(server.client, 'execute_code', { language, code });
    expect(value.warm).toBe(kind === 'warm');
    return value;
  };
  beforeAll(async () => {
    server = await startServer({ env });
    // The pool warms a language once it is first used.
    await callTool(server.client, 'execute_code', { language: 'node', code: '1' });
  });
  afterAll(() => server.close());

  const noInternals = (stderr: string) => {
    expect(stderr).not.toContain('__codexec');
    expect(stderr).not.toContain('node:internal');
    expect(stderr).not.toContain('/drivers/');
  };

  it("shows a syntax error on the user's line, with the caret under the user's column", async () => {
    const value = await run('node', 'const x = ;');
    expect(value).toMatchObject({ success: false, exit_code: 1 });
    expect(value.stderr).toMatch(/_codexec_script\.mjs:1\nconst x = ;\n {10}\^\n/);
    expect(value.stderr).toContain("SyntaxError: Unexpected token ';'");
    noInternals(value.stderr);
  });

  it("places a thrown error at the user's line and column, in node and typescript", async () => {
    const node = await run('node', '\n\nnull.x');
    expect(node.stderr).toMatch(
      /TypeError: Cannot read properties of null[^\n]*\n {4}at file:\/\/\/\S+\/_codexec_script\.mjs:3:6\n/,
    );
    noInternals(node.stderr);
    const ts = await run('typescript', 'const n: number = 1;\nthrow new Error(`at line ${n + 1}`)');
    expect(ts.stderr).toMatch(/Error: at line 2\n {4}at file:\/\/\/\S+\/_codexec_script\.mjs:2:7\n/);
    noInternals(ts.stderr);
  });

  it('gives require, __filename and __dirname, and lets code declare its own require', async () => {
    const globals = await run(
      'node',
      'console.log(require("node:path").basename(__dirname), require("node:path").basename(__filename))',
    );
    expect(globals.stdout).toMatch(/^exec_[0-9a-f]{12} _codexec_script\.mjs\n$/);
    const own = await run(
      'node',
      'import { createRequire } from "node:module";\nconst require = createRequire(import.meta.url);\nconsole.log(typeof require("node:os").cpus)',
    );
    expect(own).toMatchObject({ success: true, stdout: 'function\n' });
    const hashbang = await run('node', '#!/usr/bin/env node\nconsole.log(__filename.endsWith(".mjs"))');
    expect(hashbang).toMatchObject({ success: true, stdout: 'true\n' });
  });

  it('keeps the frames of node:fs and of the user', async () => {
    const value = await run('node', 'import fs from "node:fs";\nfs.readFileSync("/nonexistent-codexec")');
    expect(value.stderr).toContain('ENOENT');
    expect(value.stderr).toMatch(/at [^\n]*\(node:fs:\d+:\d+\)/);
    expect(value.stderr).toMatch(/_codexec_script\.mjs:2:4/);
    noInternals(value.stderr);
  });
});
