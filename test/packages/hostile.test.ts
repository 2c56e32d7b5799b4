// A critical finding of a security review, as a hostile model ran it: install_package ran the installer on
// the host, as root, in a directory the session's code could write. Each attack plants files (or
// a link) in the session's package directory, or publishes a package with an install script, and
// checks that nothing ran on the host and nothing outside the sandbox changed.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { callTool, startServer, type TestServer, tempDir } from '../helpers/server.js';
import { buildWheel, type LocalRegistry, startRegistry } from './fixtures.js';

type Value = Record<string, unknown> & { code?: string; error?: string; install_output?: string };

/** An npm tarball whose preinstall script records who ran it and tries to write `hostFile`. */
function scriptedTarball(dir: string, name: string, hostFile: string): Buffer {
  const root = join(dir, name);
  mkdirSync(join(root, 'package'), { recursive: true });
  const script =
    "node -e \"const fs=require('fs');fs.writeFileSync('ran-as',String(process.getuid()));" +
    `try{fs.writeFileSync('${hostFile}','x')}catch{}"`;
  writeFileSync(
    join(root, 'package', 'package.json'),
    JSON.stringify({ name, version: '1.0.0', main: 'index.js', scripts: { preinstall: script } }),
  );
  writeFileSync(join(root, 'package', 'index.js'), 'module.exports = "scripted";\n');
  execFileSync('tar', ['-czf', join(root, 'package.tgz'), '-C', root, 'package']);
  return readFileSync(join(root, 'package.tgz'));
}

describe('install_package never runs what code planted, nor a package script, on the host', () => {
  const dir = tempDir('codexec-hostile-install-');
  const host = tempDir('codexec-host-marks-');
  let registry: LocalRegistry;
  let server: TestServer;
  const call = (name: string, args: Record<string, unknown>) => callTool<Value>(server.client, name, args);
  const send = (session: string, code: string) =>
    call('send_to_session', { session_id: session, code }) as Promise<{ value: Value & { stdout?: string } }>;

  beforeAll(async () => {
    const wheels = join(dir, 'wheels');
    mkdirSync(wheels);
    buildWheel(wheels, 'codexec_hostile_demo', '1.0.0', 5);
    writeFileSync(join(wheels, 'codexec_sdist_only-1.0.0.tar.gz'), 'not even an sdist');
    registry = await startRegistry({
      npm: {
        'codexec-scripted': {
          version: '1.0.0',
          tarball: scriptedTarball(dir, 'codexec-scripted', join(host, 'npm-script')),
        },
      },
    });
    server = await startServer({ env: { PIP_NO_INDEX: '1', PIP_FIND_LINKS: wheels } });
  });
  afterAll(async () => {
    await server.close();
    await registry.close();
    rmSync(dir, { recursive: true, force: true });
    rmSync(host, { recursive: true, force: true });
  });

  it('refuses archive-shaped names before anything runs', async () => {
    for (const [language, name] of [
      ['python', 'evil.tar.gz'],
      ['python', 'x.zip'],
      ['node', 'evil.tgz'],
      ['node', 'x.tar'],
    ] as const) {
      const refused = await call('install_package', { language, package: name });
      expect({ name, ...refused.value }).toMatchObject({ name, success: false, code: 'INVALID_INPUT' });
    }
  });

  it('pip: a `pip` package planted in the session directory is not imported by the installer', async () => {
    const session = String((await call('start_session', { language: 'python' })).value.session_id);
    const planted = await send(
      session,
      [
        'import os',
        "os.makedirs('.packages/python/pip', exist_ok=True)",
        `body = ${JSON.stringify(`open(${JSON.stringify(join(host, 'pip-ran'))}, 'w').write('root')\n`)}`,
        "for name in ('__init__.py', '__main__.py'): open(f'.packages/python/pip/{name}', 'w').write(body)",
        "print('planted')",
      ].join('\n'),
    );
    expect(planted.value.stdout).toBe('planted\n');
    const installed = await call('install_package', {
      language: 'python',
      package: 'codexec-hostile-demo',
      session_id: session,
    });
    expect(installed.value).toMatchObject({ success: true, version: '1.0.0' });
    expect(readdirSync(host)).toEqual([]);
    const used = await send(session, 'import codexec_hostile_demo\nprint(codexec_hostile_demo.VALUE)');
    expect(used.value.stdout).toBe('5\n');
    await call('close_session', { session_id: session });
  });

  it('npm: a package.json with a preinstall script and an .npmrc planted in the session directory are never read', async () => {
    const session = String((await call('start_session', { language: 'node' })).value.session_id);
    const mark = join(host, 'npm-planted');
    const planted = await send(
      session,
      [
        "const fs = require('fs');",
        "fs.mkdirSync('.packages/node', { recursive: true });",
        `fs.writeFileSync('.packages/node/package.json', JSON.stringify({ name: 'x', version: '1.0.0', scripts: { preinstall: ${JSON.stringify(`touch ${mark}`)} } }));`,
        "fs.writeFileSync('.packages/node/.npmrc', 'registry=http://127.0.0.1:9/\\n');",
        "'planted'",
      ].join('\n'),
    );
    expect(planted.value.stdout).toBe("'planted'\n");
    const installed = await call('install_package', {
      language: 'node',
      package: 'is-odd@3.0.1',
      session_id: session,
    });
    expect(installed.value).toMatchObject({ success: true, version: '3.0.1' });
    expect(readdirSync(host)).toEqual([]);
    const used = await send(session, 'require("is-odd")(3)');
    expect(used.value.stdout).toBe('true\n');
    await call('close_session', { session_id: session });
  }, 120_000);

  it("a registry package's install script runs in the sandbox as its uid, never on the host", async () => {
    const server2 = await startServer({ env: { npm_config_registry: `${registry.url}/` } });
    try {
      const installed = await callTool<Value>(server2.client, 'install_package', {
        language: 'node',
        package: 'codexec-scripted',
      });
      expect(installed.value).toMatchObject({ success: true, version: '1.0.0' });
      const ranAs = readFileSync(
        join(server2.home, 'envs', 'node', 'node_modules', 'codexec-scripted', 'ran-as'),
        'utf8',
      );
      expect(ranAs).not.toBe('0');
      expect(existsSync(join(host, 'npm-script'))).toBe(false);
      const ran = await callTool<Value>(server2.client, 'execute_code', {
        language: 'node',
        code: 'console.log(require("codexec-scripted"))',
      });
      expect(ran.value).toMatchObject({ success: true, stdout: 'scripted\n' });
    } finally {
      await server2.close();
    }
  }, 120_000);

  it("a session's package directory turned into a link to the host is never written through", async () => {
    const session = String((await call('start_session', { language: 'python' })).value.session_id);
    const linked = await send(
      session,
      `import os, shutil\nshutil.rmtree('.packages/python')\nos.symlink(${JSON.stringify(host)}, '.packages/python')\nprint('linked')`,
    );
    expect(linked.value.stdout).toBe('linked\n');
    const installed = await call('install_package', {
      language: 'python',
      package: 'codexec-hostile-demo',
      session_id: session,
    });
    expect(installed.value.success).toBe(false);
    expect(readdirSync(host)).toEqual([]);
    await call('close_session', { session_id: session });
  });

  it('pip installs wheels only: an sdist-only package is refused with the reason', async () => {
    const installed = await call('install_package', { language: 'python', package: 'codexec-sdist-only' });
    expect(installed.value.success).toBe(false);
    expect(installed.value.install_output).toContain('wheels only');
  });
});
