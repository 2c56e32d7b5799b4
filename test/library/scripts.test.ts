import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPostgres, type TestPostgres } from '../helpers/postgres.js';
import { callTool, startServer, type TestServer, tempDir } from '../helpers/server.js';

type Value = Record<string, unknown> & { code?: string; error?: string };

// Each behaviour on both backends: the disk library (its files checked too) and CODEXEC_STORE.
describe.each(['disk', 'postgres'] as const)('script library over MCP (%s)', (backend) => {
  const onDisk = backend === 'disk';
  const home = tempDir();
  let server: TestServer;
  let cluster: TestPostgres | undefined;
  let env: Record<string, string> = {};
  const call = (name: string, args: Record<string, unknown>) => callTool<Value>(server.client, name, args);

  beforeAll(async () => {
    if (!onDisk) {
      cluster = await startPostgres();
      const key = join(home, 'approval.key');
      writeFileSync(key, randomBytes(32), { mode: 0o600 });
      env = { CODEXEC_STORE: await cluster.createDatabase('mcp'), CODEXEC_APPROVAL_KEY_FILE: key };
    }
    server = await startServer({ home, env });
  }, 60_000);
  afterAll(async () => {
    await server.close();
    await cluster?.stop();
    rmSync(home, { recursive: true, force: true });
  });

  it('saves a script in the seed layout and gets it back', async () => {
    const saved = await call('save_script', {
      name: 'parse-excel-report',
      description: 'Parses monthly Excel reports from finance, extracts summary rows, outputs CSV',
      language: 'python',
      code: 'import sys\nprint("report", sys.argv[1:])\nopen("output.csv", "w").write("a,b\\n")',
      tags: ['excel', 'finance', 'parsing'],
      packages: [],
    });
    expect(saved.isError).toBe(false);
    expect(saved.value).toMatchObject({ success: true, name: 'parse-excel-report', version: 1 });
    expect(saved.value.script_id).toMatch(/^script_[0-9a-f]{12}$/);
    const dir = join(home, 'scripts', 'parse-excel-report');
    if (onDisk) {
      expect(saved.value.path).toBe(join(dir, 'script.py'));
      expect(readFileSync(join(dir, 'script.py'), 'utf8')).toContain('report');
      expect(JSON.parse(readFileSync(join(dir, 'metadata.json'), 'utf8'))).toMatchObject({
        description: expect.stringContaining('Excel'),
        language: 'python',
        tags: ['excel', 'finance', 'parsing'],
        run_count: 0,
      });
      const index = JSON.parse(readFileSync(join(home, 'scripts', 'index.json'), 'utf8'));
      expect(index.scripts.map((s: { name: string }) => s.name)).toEqual(['parse-excel-report']);
    } else {
      expect(saved.value.path).toBe('postgres:parse-excel-report/script.py');
      expect(existsSync(dir)).toBe(false);
    }

    const got = await call('get_script', { name: 'parse-excel-report' });
    expect(got.value).toMatchObject({
      success: true,
      language: 'python',
      tags: ['excel', 'finance', 'parsing'],
      run_count: 0,
      last_run_at: null,
      last_run_success: null,
      version: 1,
      earlier_versions: 0,
    });
  });

  it('lists with language and tag filters, and searches by relevance', async () => {
    await call('save_script', {
      name: 'clean-csv-data',
      description: 'Removes empty rows from CSV files',
      language: 'node',
      code: 'console.log(process.argv.slice(2).join(","))',
      tags: ['csv'],
    });
    await call('save_script', {
      name: 'backup-db',
      description: 'Dumps a database',
      language: 'bash',
      code: 'echo "backup $1"',
      tags: ['backup', 'finance'],
    });
    expect((await call('list_scripts', {})).value.total_count).toBe(3);
    const python = await call('list_scripts', { language: 'python' });
    expect(python.value).toMatchObject({ total_count: 1, scripts: [{ name: 'parse-excel-report' }] });
    const finance = await call('list_scripts', { tag: 'finance' });
    expect((finance.value.scripts as Array<{ name: string }>).map((s) => s.name)).toEqual([
      'backup-db',
      'parse-excel-report',
    ]);
    const search = await call('search_scripts', { query: 'excel parsing' });
    expect((search.value.results as Array<{ name: string; relevance: string }>)[0]).toMatchObject({
      name: 'parse-excel-report',
      relevance: 'name_match',
    });
  });

  it('runs a script with args, reports artifacts and tracks runs', async () => {
    const ran = await call('run_script', { name: 'parse-excel-report', args: ['feb.xlsx', 'two words'] });
    expect(ran.value).toMatchObject({
      success: true,
      exit_code: 0,
      stdout: "report ['feb.xlsx', 'two words']\n",
      artifacts: ['output.csv'],
    });
    const node = await call('run_script', { name: 'clean-csv-data', args: ['a', 'b'] });
    expect(node.value.stdout).toBe('a,b\n');
    const bash = await call('run_script', { name: 'backup-db', args: ['prod'] });
    expect(bash.value.stdout).toBe('backup prod\n');
    const got = await call('get_script', { name: 'parse-excel-report' });
    expect(got.value).toMatchObject({ run_count: 1, last_run_success: true });
    expect(Date.parse(String(got.value.last_run_at))).toBeGreaterThan(Date.now() - 60_000);
  });

  it('keeps earlier versions when a name is saved again', async () => {
    await call('save_script', {
      name: 'backup-db',
      description: 'Dumps a database, v2',
      language: 'python',
      code: 'print("v2")',
      tags: ['backup'],
    });
    const current = await call('get_script', { name: 'backup-db' });
    expect(current.value).toMatchObject({
      version: 2,
      earlier_versions: 1,
      code: 'print("v2")',
      language: 'python',
    });
    expect(current.value.run_count).toBe(1);
    const first = await call('get_script', { name: 'backup-db', version: 1 });
    expect(first.value).toMatchObject({ code: 'echo "backup $1"', code_version: 1 });
    const missing = await call('get_script', { name: 'backup-db', version: 7 });
    expect(missing.value).toMatchObject({ success: false, code: 'NOT_FOUND' });
    expect((await call('run_script', { name: 'backup-db' })).value.stdout).toBe('v2\n');
  });

  it.each(['../etc', '.hidden', 'a/b', '-rf', 'x'.repeat(65), 'semi;colon', ''])(
    'refuses the unsafe name %j with no side effect',
    async (name) => {
      const saved = await call('save_script', { name, description: 'd', language: 'bash', code: 'echo' });
      expect(saved.isError).toBe(true);
      expect(saved.value.code).toBe('INVALID_INPUT');
      const got = await call('get_script', { name });
      expect(got.value.code).toBe('INVALID_INPUT');
    },
  );

  it('refuses to run a script whose packages are missing, naming them', async () => {
    await call('save_script', {
      name: 'needs-pkgs',
      description: 'needs things',
      language: 'python',
      code: 'import definitely_not_installed_pkg',
      packages: ['definitely-not-installed-pkg>=1.0'],
    });
    const ran = await call('run_script', { name: 'needs-pkgs' });
    expect(ran.isError).toBe(true);
    expect(ran.value.code).toBe('PACKAGES_MISSING');
    expect(ran.value.error).toContain('definitely-not-installed-pkg>=1.0');
    expect(ran.value.error).toContain('install_package');
    const node = await call('save_script', {
      name: 'needs-npm',
      description: 'needs lodash',
      language: 'node',
      code: 'require("lodash")',
      packages: ['lodash@4'],
    });
    expect(node.isError).toBe(false);
    expect((await call('run_script', { name: 'needs-npm' })).value.error).toContain('lodash@4');
  });

  it('refuses an unknown script clearly', async () => {
    const got = await call('get_script', { name: 'no-such-script' });
    expect(got.value).toMatchObject({ success: false, code: 'NOT_FOUND' });
    expect(got.value.error).toContain('no-such-script');
    expect((await call('run_script', { name: 'no-such-script' })).value.code).toBe('NOT_FOUND');
  });

  it('rebuilds a corrupt index.json from the script folders and survives a restart', async () => {
    if (onDisk) writeFileSync(join(home, 'scripts', 'index.json'), '{"version": 1, "scripts": [tor');
    await server.close();
    server = await startServer({ home, env });
    const listed = await call('list_scripts', {});
    expect(listed.value.total_count).toBe(5);
    if (onDisk) {
      expect(server.stderr()).toContain('script index corrupt');
      const index = JSON.parse(readFileSync(join(home, 'scripts', 'index.json'), 'utf8'));
      expect(index.scripts).toHaveLength(5);
    }
    expect((await call('get_script', { name: 'parse-excel-report' })).value.run_count).toBe(1);
  });

  it.runIf(onDisk)('notices a script folder missing from index.json', async () => {
    writeFileSync(join(home, 'scripts', 'index.json'), JSON.stringify({ version: 1, scripts: [] }));
    expect((await call('list_scripts', {})).value.total_count).toBe(5);
  });
});
