import { existsSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { callTool, startServer, type TestServer, tempDir } from '../helpers/server.js';
import { buildWheel } from './fixtures.js';

type Value = Record<string, unknown> & { code?: string; error?: string; install_output?: string };

describe('install_package into the global environment', () => {
  const wheels = tempDir('codexec-wheels-');
  let server: TestServer;
  const call = (name: string, args: Record<string, unknown>) => callTool<Value>(server.client, name, args);

  beforeAll(async () => {
    buildWheel(wheels);
    buildWheel(wheels, 'codexec_session_demo', '2.0.0', 7);
    buildWheel(wheels, 'numpy', '99.0.0', 99);
    // Installs, then fails to import: a dependency pip did not bring (and a mark of where it ran).
    const broken = [
      'try:',
      "    open('/tmp/codexec-import-check-ran', 'w').close()",
      'except OSError:',
      '    pass',
      'import codexec_absent_dependency',
    ].join('\n');
    buildWheel(wheels, 'codexec_broken', '1.0.0', 0, broken);
    server = await startServer({
      env: { PIP_NO_INDEX: '1', PIP_FIND_LINKS: wheels, CODEXEC_PACKAGE_BLOCKLIST: 'evil-pkg, left-pad' },
    });
  });
  afterAll(async () => {
    await server.close();
    rmSync(wheels, { recursive: true, force: true });
  });

  it('installs a local wheel with pip and later python runs import it', async () => {
    const installed = await call('install_package', { language: 'python', package: 'codexec-demo>=1.0' });
    expect(installed.value).toMatchObject({
      success: true,
      package: 'codexec-demo',
      version: '1.2.3',
      session_id: null,
    });
    expect(installed.value.install_output).toContain('Successfully installed codexec-demo-1.2.3');
    // The model reads the one line that says what was installed; the log stays in structuredContent.
    const facts = { package: 'codexec-demo', version: '1.2.3', exit_code: 0 };
    expect(installed.text).toBe(`${JSON.stringify(facts)}\nSuccessfully installed codexec-demo-1.2.3\n`);
    const ran = await call('execute_code', {
      language: 'python',
      code: 'import codexec_demo\nprint(codexec_demo.VALUE)',
    });
    expect(ran.value).toMatchObject({ success: true, stdout: '42\n' });
  });

  it('says success: false, naming the error, when what pip installed does not import', async () => {
    rmSync('/tmp/codexec-import-check-ran', { force: true });
    const installed = await call('install_package', { language: 'python', package: 'codexec-broken' });
    expect(installed.value).toMatchObject({ success: false, package: 'codexec-broken', version: '1.0.0' });
    expect(installed.text).toContain(`\n${installed.value.install_output}`);
    expect(installed.value.install_output).toContain('Successfully installed codexec-broken-1.0.0');
    expect(installed.value.install_output).toContain(
      "codexec-broken installed, but does not import: import codexec_broken: ModuleNotFoundError: No module named 'codexec_absent_dependency'",
    );
    // The import ran the package's code in the sandbox: its /tmp is not the host's (or not writable).
    expect(existsSync('/tmp/codexec-import-check-ran')).toBe(false);
  });

  it('lets run_script pass its pre-flight once the package is installed', async () => {
    await call('save_script', {
      name: 'uses-demo',
      description: 'prints the demo value',
      language: 'python',
      code: 'import codexec_demo\nprint("value", codexec_demo.VALUE)',
      packages: ['codexec-demo'],
    });
    expect((await call('run_script', { name: 'uses-demo' })).value).toMatchObject({
      success: true,
      stdout: 'value 42\n',
    });
  });

  it('installs from the npm registry and node and typescript code can require and import it', async () => {
    const installed = await call('install_package', { language: 'node', package: 'is-number@7.0.0' });
    expect(installed.value).toMatchObject({ success: true, package: 'is-number', version: '7.0.0' });
    const required = await call('execute_code', {
      language: 'node',
      code: 'console.log(require("is-number")(5))',
    });
    expect(required.value).toMatchObject({ success: true, stdout: 'true\n', artifacts: [] });
    const imported = await call('execute_code', {
      language: 'typescript',
      code: 'import isNumber from "is-number";\nconst v: boolean = isNumber("x");\nconsole.log(v)',
    });
    expect(imported.value).toMatchObject({ success: true, stdout: 'false\n' });
  }, 120_000);

  it('reports a failing pip install with the installer output, promptly', async () => {
    const started = Date.now();
    const failed = await call('install_package', { language: 'python', package: 'no-such-package-codexec' });
    expect(failed.isError).toBe(false);
    expect(failed.value).toMatchObject({ success: false, version: null });
    expect(failed.value.install_output).toMatch(/No matching distribution|Could not find/);
    expect(Date.now() - started).toBeLessThan(30_000);
  });

  it('reports a failing npm install (unknown package) with the installer output', async () => {
    const failed = await call('install_package', {
      language: 'node',
      package: 'codexec-no-such-package-zz9q',
    });
    expect(failed.value).toMatchObject({ success: false, version: null });
    expect(failed.value.install_output).toMatch(/404|Not Found/i);
  }, 120_000);

  it.each([
    ['python', 'pandas; touch /tmp/codexec-pwned'],
    ['python', '--target=/tmp/codexec-pwned'],
    ['node', 'is-number && touch /tmp/codexec-pwned'],
    ['node', 'file:/tmp/codexec-pwned'],
  ])('refuses the injection-shaped %s spec %j with no side effect', async (language, pkg) => {
    const refused = await call('install_package', { language, package: pkg });
    expect(refused.isError).toBe(true);
    expect(refused.value.code).toBe('INVALID_INPUT');
    expect(existsSync('/tmp/codexec-pwned')).toBe(false);
  });

  it('refuses blocklisted packages', async () => {
    const refused = await call('install_package', { language: 'python', package: 'Evil_Pkg' });
    expect(refused.value).toMatchObject({ success: false, code: 'BLOCKED_BY_POLICY' });
    expect(existsSync(join(server.home, 'envs', 'python', 'evil_pkg'))).toBe(false);
  });

  it('installs into one python session only, tracked in list_sessions and the session log', async () => {
    const session = await call('start_session', { language: 'python' });
    const other = await call('start_session', { language: 'python' });
    const id = String(session.value.session_id);
    const installed = await call('install_package', {
      language: 'python',
      package: 'codexec-session-demo',
      session_id: id,
    });
    expect(installed.value).toMatchObject({ success: true, version: '2.0.0', session_id: id });
    const used = await call('send_to_session', {
      session_id: id,
      code: 'import codexec_session_demo\ncodexec_session_demo.VALUE',
    });
    expect(used.value).toMatchObject({ success: true, stdout: '7\n' });
    const elsewhere = await call('send_to_session', {
      session_id: String(other.value.session_id),
      code: 'import codexec_session_demo',
    });
    expect(elsewhere.value.stderr).toContain('ModuleNotFoundError');
    const oneShot = await call('execute_code', { language: 'python', code: 'import codexec_session_demo' });
    expect(oneShot.value.success).toBe(false);
    const listed = await call('list_sessions', {});
    const mine = (listed.value.sessions as Array<{ session_id: string; packages_installed: string[] }>).find(
      (s) => s.session_id === id,
    );
    expect(mine?.packages_installed).toEqual(['codexec-session-demo']);
    const lines = readFileSync(join(server.home, 'logs', `session-${id}.jsonl`), 'utf8')
      .trim()
      .split('\n');
    expect(lines.map((line) => JSON.parse(line)).find((e) => e.type === 'package_install')).toMatchObject({
      session_id: id,
      package: 'codexec-session-demo',
      version: '2.0.0',
      success: true,
    });
    await call('close_session', { session_id: id });
    await call('close_session', { session_id: String(other.value.session_id) });
  });

  it("puts a session's packages before the system's dist-packages: its numpy, not Debian's", async () => {
    // An installed package's dependency loses to an older system copy if the system's
    // dist-packages come first: the package then fails to import (pandas over Debian's numpy).
    const system = await call('execute_code', {
      language: 'python',
      code: 'import numpy; print(numpy.__file__)',
    });
    expect(system.value.stdout).toMatch(/dist-packages\/numpy\/__init__\.py/);
    const session = await call('start_session', { language: 'python' });
    const id = String(session.value.session_id);
    const installed = await call('install_package', {
      language: 'python',
      package: 'numpy==99.0.0',
      session_id: id,
    });
    expect(installed.value).toMatchObject({ success: true, version: '99.0.0' });
    const used = await call('send_to_session', {
      session_id: id,
      code: [
        'import os, sys, sysconfig, numpy',
        'print(numpy.VALUE)',
        'at = lambda test: min(i for i, p in enumerate(sys.path) if test(p))',
        'stdlib = at(lambda p: os.path.abspath(p or ".") == sysconfig.get_paths()["stdlib"])',
        'mine = at(lambda p: "/.packages/" in p)',
        'system = at(lambda p: p.endswith("-packages"))',
        'print(stdlib < mine < system)',
      ].join('\n'),
    });
    // The installed one; the standard library still ahead of it, the system's packages after it.
    expect(used.value).toMatchObject({ success: true, stdout: '99\nTrue\n' });
    await call('close_session', { session_id: id });
  });

  it('installs from npm into a node session, which can require, import and import() it', async () => {
    const session = await call('start_session', { language: 'node' });
    const id = String(session.value.session_id);
    const installed = await call('install_package', {
      language: 'node',
      package: 'is-odd@3.0.1',
      session_id: id,
    });
    expect(installed.value).toMatchObject({ success: true, package: 'is-odd', version: '3.0.1' });
    const required = await call('send_to_session', { session_id: id, code: 'require("is-odd")(3)' });
    expect(required.value).toMatchObject({ success: true, stdout: 'true\n' });
    const imported = await call('send_to_session', {
      session_id: id,
      code: 'import isOdd from "is-odd";\nisOdd(4)',
    });
    expect(imported.value).toMatchObject({ success: true, stdout: 'false\n' });
    // A cell's own import() looks where its static imports look, the session's installs too.
    const dynamic = await call('send_to_session', {
      session_id: id,
      code: 'const { default: odd } = await import("is-odd");\nconst later = () => import("is-odd");\nodd(5) && (await later()).default(7)',
    });
    expect(dynamic.value).toMatchObject({ success: true, stdout: 'true\n', stderr: '' });
    await call('close_session', { session_id: id });
  }, 120_000);

  it('refuses a package for the wrong kind of session', async () => {
    const session = await call('start_session', { language: 'bash' });
    const id = String(session.value.session_id);
    const refused = await call('install_package', {
      language: 'python',
      package: 'codexec-demo',
      session_id: id,
    });
    expect(refused.value).toMatchObject({ success: false, code: 'INVALID_INPUT' });
    expect(refused.value.error).toContain('bash session');
    await call('close_session', { session_id: id });
  });

  it('refuses an unknown session clearly', async () => {
    const refused = await call('install_package', {
      language: 'python',
      package: 'codexec-demo',
      session_id: 'sess_000000000000',
    });
    expect(refused.value).toMatchObject({ success: false, code: 'SESSION_NOT_FOUND' });
  });
});

describe('install_package output passes the secrets filter', () => {
  it('masks a secret value of the server environment in the installer output', async () => {
    const secret = 'codexec-hidden-pkg-q7';
    const server = await startServer({ env: { PIP_NO_INDEX: '1', PKG_SECRET_TOKEN: secret } });
    try {
      const failed = await callTool<Value>(server.client, 'install_package', {
        language: 'python',
        package: secret,
      });
      expect(failed.value).toMatchObject({ success: false });
      expect(failed.value.install_output).toMatch(/No matching distribution|Could not find/);
      expect(failed.value.install_output).toContain('***');
      expect(failed.value.install_output).not.toContain(secret);
    } finally {
      await server.close();
    }
  });
});
