import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { callTool, startServer, type TestServer, tempDir } from '../helpers/server.js';
import {
  buildNpmTarball,
  buildWheel,
  type LocalRegistry,
  selfSignedCert,
  startRegistry,
} from './fixtures.js';

// Installs must see the config files the operator's own pip / npm would, whatever
// directory they install into. Each setting here lives only in a *global* config file, placed
// where pip and npm look for it on an operator's machine; a local registry records the requests.

type Value = Record<string, unknown> & { install_output?: string; stdout?: string };

function write(path: string, text: string): void {
  mkdirSync(join(path, '..'), { recursive: true });
  writeFileSync(path, text);
}

describe('install_package with registries set in the global config files', () => {
  const dir = tempDir('codexec-pkgconf-');
  let index: LocalRegistry;
  let npmRegistry: LocalRegistry;
  let server: TestServer;
  const call = (name: string, args: Record<string, unknown>) => callTool<Value>(server.client, name, args);

  beforeAll(async () => {
    const wheel = buildWheel(dir, 'codexec_globalconf_demo', '1.0.0', 17);
    index = await startRegistry({
      pypi: { 'codexec-globalconf-demo': { file: wheel, bytes: readFileSync(join(dir, wheel)) } },
    });
    // The npm registry is HTTPS behind a CA only the global npmrc's `cafile` names (as on a machine
    // that once failed with SELF_SIGNED_CERT_IN_CHAIN).
    const tls = selfSignedCert(dir);
    npmRegistry = await startRegistry({
      tls,
      npm: {
        'codexec-globalconf-demo': {
          version: '1.0.0',
          tarball: buildNpmTarball(dir, 'codexec-globalconf-demo', '1.0.0', 'from the local registry'),
        },
      },
    });
    // pip: the site-wide pip.conf in $XDG_CONFIG_DIRS/pip/ (what /etc/xdg/pip/pip.conf is by default).
    write(join(dir, 'xdg', 'pip', 'pip.conf'), `[global]\nindex-url = ${index.url}/simple/\n`);
    // npm: the operator moved npm's prefix (`npm config set prefix …` writes the user npmrc); npm's
    // global config is then $PREFIX/etc/npmrc, which `--prefix <codexec dir>` used to replace.
    write(join(dir, 'user-npmrc'), `prefix=${join(dir, 'npm-prefix')}\n`);
    write(join(dir, 'npm-prefix', 'etc', 'npmrc'), `registry=${npmRegistry.url}/\ncafile=${tls.certPath}\n`);
    server = await startServer({
      env: { XDG_CONFIG_DIRS: join(dir, 'xdg'), NPM_CONFIG_USERCONFIG: join(dir, 'user-npmrc') },
    });
  });
  afterAll(async () => {
    await server?.close();
    await index?.close();
    await npmRegistry?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('pip reads index-url from the site-wide pip.conf and installs from that index', async () => {
    const installed = await call('install_package', {
      language: 'python',
      package: 'codexec-globalconf-demo',
    });
    expect(installed.value).toMatchObject({ success: true, version: '1.0.0' });
    expect(index.requests).toContain('/simple/codexec-globalconf-demo/');
    expect(index.requests).toContain('/files/codexec_globalconf_demo-1.0.0-py3-none-any.whl');
    const ran = await call('execute_code', {
      language: 'python',
      code: 'import codexec_globalconf_demo\nprint(codexec_globalconf_demo.VALUE)',
    });
    expect(ran.value).toMatchObject({ success: true, stdout: '17\n' });
  }, 60_000);

  it("npm reads registry and cafile from its own prefix's etc/npmrc, not the install prefix's", async () => {
    const installed = await call('install_package', { language: 'node', package: 'codexec-globalconf-demo' });
    expect(installed.value).toMatchObject({ success: true, version: '1.0.0' });
    expect(npmRegistry.requests).toContain('/codexec-globalconf-demo');
    expect(npmRegistry.requests).toContain('/codexec-globalconf-demo/-/codexec-globalconf-demo-1.0.0.tgz');
    const ran = await call('execute_code', {
      language: 'node',
      code: 'console.log(require("codexec-globalconf-demo"))',
    });
    expect(ran.value).toMatchObject({ success: true, stdout: 'from the local registry\n' });
  }, 60_000);
});

describe('install_package with an unreachable registry', () => {
  const dir = tempDir('codexec-pkgdown-');
  let server: TestServer;
  const call = (name: string, args: Record<string, unknown>) => callTool<Value>(server.client, name, args);

  beforeAll(async () => {
    // Nothing listens on port 1: every connection is refused at once.
    write(join(dir, 'pip.conf'), '[global]\nindex-url = http://127.0.0.1:1/simple/\n');
    write(join(dir, 'npmrc'), 'registry=http://127.0.0.1:1/\n');
    server = await startServer({
      env: { PIP_CONFIG_FILE: join(dir, 'pip.conf'), NPM_CONFIG_USERCONFIG: join(dir, 'npmrc') },
    });
  });
  afterAll(async () => {
    await server?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  // Generous bounds: this checks bounded retries (npm's defaults took 70 s), not speed.
  it('npm fails within seconds with its own connection error', async () => {
    const started = Date.now();
    const failed = await call('install_package', { language: 'node', package: 'codexec-unreachable-demo' });
    expect(failed.value).toMatchObject({ success: false, version: null });
    expect(failed.value.install_output).toContain('ECONNREFUSED');
    expect(failed.value.install_output).toContain('127.0.0.1:1');
    expect(Date.now() - started).toBeLessThan(30_000);
  }, 120_000);

  it('pip fails within seconds with its own connection error', async () => {
    const started = Date.now();
    const failed = await call('install_package', { language: 'python', package: 'codexec-unreachable-demo' });
    expect(failed.value).toMatchObject({ success: false, version: null });
    expect(failed.value.install_output).toContain('Connection refused');
    expect(failed.value.install_output).toContain(
      'No matching distribution found for codexec-unreachable-demo',
    );
    expect(Date.now() - started).toBeLessThan(30_000);
  }, 120_000);
});
