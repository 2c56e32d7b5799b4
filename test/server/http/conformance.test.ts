// The official MCP conformance suite (@modelcontextprotocol/conformance, pinned in
// test/conformance/package.json and the root lock, so `npm ci` installs it) against the real
// `codexec serve --http --no-auth`. The suite needs Node >= 22: the npm package `node` brings one,
// installed under test/conformance/node_modules so that it never shadows the project's own node
// on npm scripts' PATH.
import { spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type HttpServer, startHttp } from '../../helpers/http.js';
import { tempDir } from '../../helpers/server.js';

const SUITE_DIR = resolve(import.meta.dirname, '../../conformance');
const NODE_22 = join(SUITE_DIR, 'node_modules/node/bin/node');
const SUITE_CLI = join(
  createRequire(join(SUITE_DIR, 'package.json')).resolve('@modelcontextprotocol/conformance/package.json'),
  '../dist/index.js',
);
/**
 * Every server scenario of the suite that checks something a server without its fixtures has. The
 * others call the reference server's own tools, resources and prompts (`test_simple_text`,
 * `test://static-text`, prompts/get…), or completion/complete and resources/subscribe, which
 * codexec does not offer; server-sse-polling and server-sse-multiple-streams check nothing (only
 * warnings) against a server that serves without a session id, as codexec does.
 */
const SCENARIOS = [
  'server-initialize',
  'ping',
  'logging-set-level',
  'tools-list',
  'resources-list',
  'dns-rebinding-protection',
];

interface Check {
  readonly id: string;
  readonly status: string;
  readonly errorMessage?: string;
}

/** Run one scenario; its exit code, its output and the checks it wrote. */
async function runScenario(url: string, scenario: string, out: string) {
  const child = spawn(NODE_22, [SUITE_CLI, 'server', '--url', url, '--scenario', scenario, '-o', out], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk));
  const code = await new Promise<number | null>((done) => child.once('exit', done));
  const dir = readdirSync(out).find((name) => name.startsWith(`server-${scenario}-`));
  const checks: Check[] = dir ? JSON.parse(readFileSync(join(out, dir, 'checks.json'), 'utf8')) : [];
  return { code, output, checks };
}

describe('the official MCP conformance suite against serve --http --no-auth', () => {
  let server: HttpServer;
  const out = tempDir('codexec-conformance-');
  beforeAll(async () => {
    server = await startHttp({ args: ['--no-auth'] });
  });
  afterAll(async () => {
    await server?.stop();
    if (server) rmSync(server.home, { recursive: true, force: true });
    rmSync(out, { recursive: true, force: true });
  });

  it("has the suite and a Node >= 22 to run it (npm ci installs both), off npm scripts' PATH", () => {
    expect(existsSync(NODE_22), `${NODE_22} is missing: run npm ci`).toBe(true);
    expect(existsSync(SUITE_CLI), `${SUITE_CLI} is missing: run npm ci`).toBe(true);
    // Hoisted to the root, the package's `node` bin would run vitest and every test's node on 22,
    // where better-sqlite3 (built for the project's Node) does not load. package-lock.json keeps it
    // under test/conformance/node_modules.
    const shadow = resolve(SUITE_DIR, '../../node_modules/.bin/node');
    expect(
      existsSync(shadow),
      `${shadow} shadows the project's node: keep "node" nested in package-lock.json`,
    ).toBe(false);
  });

  for (const scenario of SCENARIOS) {
    it(`passes ${scenario}`, async () => {
      const { code, output, checks } = await runScenario(server.url, scenario, out);
      const failed = checks.filter((check) => check.status === 'FAILURE');
      expect(failed, output).toEqual([]);
      expect(checks.filter((check) => check.status === 'SUCCESS').length, output).toBeGreaterThan(0);
      expect(code, output).toBe(0);
    });
  }
});
