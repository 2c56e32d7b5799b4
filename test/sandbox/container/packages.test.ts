// install_package into a docker-mode session: the image's own pip / npm, in a container beside the
// session with its workspace, reaching the registry as the host does (a local one here: PyPI is
// not reachable), while the session's code stays offline. Under each runtime of RUNTIMES: the
// installer's host network is a path of its own under gVisor.
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { callTool, startServer, type TestServer, tempDir } from '../../helpers/server.js';
import { buildNpmTarball, buildWheel, type LocalRegistry, startRegistry } from '../../packages/fixtures.js';
import { containersOf, createdSince, ensureImage, RUNTIMES, sessionContainersOf } from './engine.js';

type Value = Record<string, unknown>;

describe.each(RUNTIMES)('install_package into a docker-mode session (runtime $name)', ({ env, missing }) => {
  if (missing) console.warn(`skipped: ${missing}`);
  const dir = tempDir('codexec-docker-pkgs-');
  let registry: LocalRegistry;
  let server: TestServer;
  const call = (name: string, args: Value) => callTool<Value>(server.client, name, args);

  beforeAll(async () => {
    if (missing) return;
    ensureImage();
    const wheel = buildWheel(dir, 'codexec_box_demo', '3.1.0', 31);
    registry = await startRegistry({
      pypi: { 'codexec-box-demo': { file: wheel, bytes: readFileSync(join(dir, wheel)) } },
      npm: {
        'codexec-box-npm': {
          version: '1.0.0',
          tarball: buildNpmTarball(dir, 'codexec-box-npm', '1.0.0', 'boxed'),
        },
      },
    });
    server = await startServer({
      env: {
        ...env,
        PIP_INDEX_URL: `${registry.url}/simple`,
        npm_config_registry: registry.url,
      },
    });
  }, 600_000);
  afterAll(async () => {
    await server?.close();
    await registry?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it.skipIf(missing)(
    'installs with the image’s pip into a python session, which imports it; one-shot runs do not see it',
    async () => {
      const { value: session } = await call('start_session', { language: 'python' });
      const id = String(session.session_id);
      const before = new Date();
      const existing = containersOf(server.pid);
      const { value: installed } = await call('install_package', {
        language: 'python',
        package: 'codexec-box-demo',
        session_id: id,
      });
      expect(installed, String(installed.install_output)).toMatchObject({ success: true, version: '3.1.0' });
      expect(registry.requests).toContain('/simple/codexec-box-demo/');
      // It ran in a container of its own (not on the host, not in the offline session's).
      // (The engine's event log may take a moment to show it.)
      const created = () => createdSince(server.pid, before).filter((name) => !existing.includes(name));
      await expect.poll(() => created().length, { timeout: 10_000 }).toBe(1);
      // The session (its own container, still running, offline) imports it.
      expect(sessionContainersOf(server.pid)).toHaveLength(1);
      const { value: used } = await call('send_to_session', {
        session_id: id,
        code: 'import codexec_box_demo, os\nprint(codexec_box_demo.VALUE, codexec_box_demo.__file__.startswith("/workspace/"))',
      });
      expect(used).toMatchObject({ success: true, stdout: '31 True\n' });
      const { value: oneShot } = await call('execute_code', {
        language: 'python',
        code: 'import codexec_box_demo',
      });
      expect(oneShot.success).toBe(false);
    },
  );

  it.skipIf(missing)('installs with the image’s npm into a node session, which requires it', async () => {
    const { value: session } = await call('start_session', { language: 'node' });
    const id = String(session.session_id);
    const { value: installed } = await call('install_package', {
      language: 'node',
      package: 'codexec-box-npm',
      session_id: id,
    });
    expect(installed, String(installed.install_output)).toMatchObject({ success: true, version: '1.0.0' });
    const { value: used } = await call('send_to_session', {
      session_id: id,
      code: 'require("codexec-box-npm")',
    });
    expect(used).toMatchObject({ success: true, stdout: "'boxed'\n" });
  });
});
