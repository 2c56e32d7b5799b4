// The allowlist's acceptance test: a real `npm install` in a sandboxed run (execute_command) goes through the
// egress proxy to npm's registry when only the registry's host is listed, and is refused, named in
// `network_denied`, when it is not. The registry is the one npm on this machine is configured with
// (`npm config get registry`): no host is named here. It needs that registry reachable from the
// machine; npm in the sandbox verifies the registry's certificate with the CA its own global
// config names (TLS end to end through CONNECT: the proxy never sees inside).
import { execFileSync } from 'node:child_process';
import { afterAll, describe, expect, it } from 'vitest';
import { callTool, startServer, type TestServer } from '../helpers/server.js';

interface CommandRun {
  success: boolean;
  exit_code: number | null;
  stdout: string;
  stderr: string;
  network_denied?: Array<{ host: string; port: number }>;
}

const registry = new URL(execFileSync('npm', ['config', 'get', 'registry'], { encoding: 'utf8' }).trim());
const port = Number(registry.port || (registry.protocol === 'https:' ? 443 : 80));
/** The allowlist entry: the host, with its port when it is not one a bare name allows (443, 80). */
const entry = port === 443 || port === 80 ? registry.hostname : `${registry.hostname}:${port}`;
/** Bounded retries, as install_package's own npm (src/packages/commands.ts): a refusal is prompt. */
const NPM =
  'npm install --no-audit --no-fund --fetch-retries=1 --fetch-retry-mintimeout=1000 --fetch-retry-maxtimeout=5000';

describe('a real npm install in a sandboxed run, through the egress proxy', () => {
  const servers: TestServer[] = [];
  const serve = async (allowed: string) => {
    const server = await startServer({
      env: { CODEXEC_NETWORK: 'allowlist', CODEXEC_ALLOWED_DOMAINS: allowed },
    });
    servers.push(server);
    return server;
  };
  const command = async (server: TestServer, line: string) =>
    (await callTool<CommandRun>(server.client, 'execute_command', { command: line, timeout: 100 })).value;

  afterAll(async () => {
    await Promise.all(servers.map((server) => server.close()));
  });

  it("succeeds with only the registry's host listed, and the package loads", async () => {
    const server = await serve(entry);
    const installed = await command(server, `${NPM} is-number@7.0.0 2>&1`);
    expect(installed.success, installed.stdout + installed.stderr).toBe(true);
    expect(installed.network_denied).toBeUndefined();
    const used = await command(server, `node -e "console.log(require('is-number')(5))"`);
    expect(used).toMatchObject({ success: true, stdout: 'true\n' });
  }, 120_000);

  it('fails with network_denied naming the registry when it is not listed', async () => {
    const server = await serve('');
    const installed = await command(server, `${NPM} is-number@7.0.0 2>&1`);
    expect(installed.success).toBe(false);
    expect(installed.network_denied).toEqual([{ host: registry.hostname, port }]);
    const used = await command(server, `node -e "require('is-number')"`);
    expect(used.success).toBe(false);
  }, 120_000);
});
