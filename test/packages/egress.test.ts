// install_package under CODEXEC_NETWORK=allowlist: a package's install script (npm rebuild, in the
// code sandbox) reaches only listed hosts, through a lane of the egress proxy of its own; the host
// step (npm as the operator's own, here from a local registry) keeps the operator's network.
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Origin, origin } from '../helpers/origin.js';
import { callTool, startServer, tempDir } from '../helpers/server.js';
import { type LocalRegistry, startRegistry } from './fixtures.js';

/**
 * `npm pack` of a package whose install script asks both origins for /hello (through the proxy the
 * variables name, if any) and notes each status in `probe`; the script itself always succeeds.
 */
function probingTarball(dir: string, name: string, ports: { listed: number; unlisted: number }): Buffer {
  const root = join(dir, name);
  mkdirSync(root, { recursive: true });
  const fetch = (port: number) =>
    `$(curl -s --noproxy '' --max-time 10 -o /dev/null -w '%{http_code}' http://localhost:${port}/hello)`;
  writeFileSync(
    join(root, 'probe.sh'),
    `echo "listed=${fetch(ports.listed)} unlisted=${fetch(ports.unlisted)}" > probe\n`,
  );
  writeFileSync(
    join(root, 'package.json'),
    JSON.stringify({ name, version: '1.0.0', main: 'index.js', scripts: { install: 'sh probe.sh' } }),
  );
  writeFileSync(join(root, 'index.js'), 'module.exports = "probed";\n');
  const file = execFileSync('npm', ['pack', '--silent', '--pack-destination', dir], {
    cwd: root,
    encoding: 'utf8',
  }).trim();
  return readFileSync(join(dir, file));
}

type Installed = {
  success: boolean;
  version: string | null;
  install_output: string;
  network_denied?: Array<{ host: string; port: number }>;
};

describe('install_package: install scripts reach the network of the server setting', () => {
  const dir = tempDir('codexec-install-egress-');
  let registry: LocalRegistry;
  let listed: Origin;
  let unlisted: Origin;
  const name = 'codexec-probing';

  beforeAll(async () => {
    [listed, unlisted] = await Promise.all([origin(), origin()]);
    const tarball = probingTarball(dir, name, { listed: listed.port, unlisted: unlisted.port });
    registry = await startRegistry({ npm: { [name]: { version: '1.0.0', tarball } } });
  });
  afterAll(async () => {
    await registry?.close();
    for (const each of [listed, unlisted]) each?.server.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** Install the package on a server with `env`; what the result and the script's probe say. */
  async function install(env: Record<string, string>) {
    const server = await startServer({ env: { npm_config_registry: `${registry.url}/`, ...env } });
    try {
      const { value } = await callTool<Installed>(server.client, 'install_package', {
        language: 'node',
        package: name,
      });
      const probe = readFileSync(join(server.home, 'envs', 'node', 'node_modules', name, 'probe'), 'utf8');
      const ran = await callTool<{ stdout: string }>(server.client, 'execute_code', {
        language: 'node',
        code: `console.log(require(${JSON.stringify(name)}))`,
      });
      return { value, probe: probe.trim(), used: ran.value.stdout };
    } finally {
      await server.close();
    }
  }

  it('allowlist: the script reaches the listed origin; the unlisted one is refused, named, never contacted', async () => {
    const before = { listed: listed.accepted, unlisted: unlisted.accepted };
    const { value, probe, used } = await install({
      CODEXEC_NETWORK: 'allowlist',
      CODEXEC_ALLOWED_DOMAINS: `localhost:${listed.port}`,
    });
    expect(value, value.install_output).toMatchObject({ success: true, version: '1.0.0' });
    expect(probe).toBe('listed=200 unlisted=403');
    expect(value.network_denied).toEqual([{ host: 'localhost', port: unlisted.port }]);
    expect(listed.accepted - before.listed).toBe(1);
    expect(unlisted.accepted - before.unlisted).toBe(0);
    expect(used).toBe('probed\n');
  }, 120_000);

  it('host: the script keeps the host network (both origins reached, nothing reported)', async () => {
    const before = unlisted.accepted;
    const { value, probe } = await install({ CODEXEC_NETWORK: 'host' });
    expect(value, value.install_output).toMatchObject({ success: true, version: '1.0.0' });
    expect(probe).toBe('listed=200 unlisted=200');
    expect(value.network_denied).toBeUndefined();
    expect(unlisted.accepted - before).toBe(1);
  }, 120_000);
});
