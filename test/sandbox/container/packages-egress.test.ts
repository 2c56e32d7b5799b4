// install_package into a docker-mode session under CODEXEC_NETWORK=allowlist: the image's pip runs
// package code as it installs, so its container gets a lane of the egress proxy of its own (the
// server's lists) instead of the host network: it reaches a listed registry, and an unlisted one
// is refused and named. The registry is on 127.0.0.2: the proxy variables send 127.0.0.1 direct.
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { callTool, startServer, type TestServer, tempDir } from '../../helpers/server.js';
import { buildWheel, type LocalRegistry, startRegistry } from '../../packages/fixtures.js';
import { ensureImage, RUNTIMES } from './engine.js';

type Value = Record<string, unknown>;

describe.each(RUNTIMES)(
  'install_package into a docker-mode session, allowlist (runtime $name)',
  ({ env, missing }) => {
    if (missing) console.warn(`skipped: ${missing}`);
    const dir = tempDir('codexec-docker-pkgs-egress-');
    let registry: LocalRegistry;
    const servers: TestServer[] = [];
    const serve = async (allowed: string) => {
      const server = await startServer({
        env: {
          ...env,
          CODEXEC_NETWORK: 'allowlist',
          CODEXEC_ALLOWED_DOMAINS: allowed,
          PIP_INDEX_URL: `${registry.url}/simple`,
        },
      });
      servers.push(server);
      return server;
    };
    /** Install the demo into a new python session of `server`; the result and what the session imports. */
    const install = async (server: TestServer) => {
      const call = (name: string, args: Value) => callTool<Value>(server.client, name, args);
      const { value: session } = await call('start_session', { language: 'python' });
      const { value: installed } = await call('install_package', {
        language: 'python',
        package: 'codexec-lane-demo',
        session_id: String(session.session_id),
      });
      const { value: used } = await call('send_to_session', {
        session_id: String(session.session_id),
        code: 'import codexec_lane_demo\nprint(codexec_lane_demo.VALUE)',
      });
      return { installed, used };
    };

    beforeAll(async () => {
      if (missing) return;
      ensureImage();
      const wheel = buildWheel(dir, 'codexec_lane_demo', '1.0.0', 17);
      registry = await startRegistry({
        host: '127.0.0.2',
        pypi: { 'codexec-lane-demo': { file: wheel, bytes: readFileSync(join(dir, wheel)) } },
      });
    }, 600_000);
    afterAll(async () => {
      await Promise.all(servers.map((server) => server.close()));
      await registry?.close();
      rmSync(dir, { recursive: true, force: true });
    });

    it.skipIf(missing)(
      'the registry listed: the image’s pip reaches it through the lane',
      async () => {
        const port = new URL(registry.url).port;
        const { installed, used } = await install(await serve(`127.0.0.2:${port}`));
        expect(installed, String(installed.install_output)).toMatchObject({
          success: true,
          version: '1.0.0',
        });
        expect(installed.network_denied).toBeUndefined();
        expect(used).toMatchObject({ success: true, stdout: '17\n' });
      },
      180_000,
    );

    it.skipIf(missing)(
      'the registry not listed: refused, named in network_denied, never asked',
      async () => {
        const asked = registry.requests.length;
        const { installed } = await install(await serve(''));
        expect(installed.success).toBe(false);
        expect(installed.network_denied).toEqual([
          { host: '127.0.0.2', port: Number(new URL(registry.url).port) },
        ]);
        expect(registry.requests.length).toBe(asked);
      },
      180_000,
    );
  },
);
