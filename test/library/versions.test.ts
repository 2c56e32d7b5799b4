// CODEXEC_MAX_SCRIPT_VERSIONS and CODEXEC_MAX_SCRIPT_BYTES (a caller cannot grow the library
// without bound): a script keeps at most that many versions, the current one
// included, and each save says how many it pruned; code over the byte limit is refused.
import { randomBytes } from 'node:crypto';
import { mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPostgres, type TestPostgres } from '../helpers/postgres.js';
import { callTool, startServer, type TestServer, tempDir } from '../helpers/server.js';

type Value = Record<string, unknown> & { code?: string; error?: string };

// On both backends: the disk library (its files checked too) and CODEXEC_STORE.
describe.each(['disk', 'postgres'] as const)('script versions and size are bounded (%s)', (backend) => {
  const onDisk = backend === 'disk';
  const home = tempDir();
  let server: TestServer;
  let cluster: TestPostgres | undefined;
  const call = (name: string, args: Record<string, unknown>) => callTool<Value>(server.client, name, args);
  const save = (name: string, code: string) =>
    call('save_script', { name, description: 'bounded', language: 'bash', code });

  beforeAll(async () => {
    // A script saved 11 times by an earlier version, which kept every version.
    const folder = join(home, 'scripts', 'old-history');
    mkdirSync(join(folder, 'versions'), { recursive: true });
    for (let v = 1; v <= 10; v++) writeFileSync(join(folder, 'versions', `${v}.sh`), `echo ${v}\n`);
    writeFileSync(join(folder, 'script.sh'), 'echo 11\n');
    writeFileSync(
      join(folder, 'metadata.json'),
      JSON.stringify({
        script_id: 'script_0123456789ab',
        name: 'old-history',
        description: 'saved eleven times',
        language: 'bash',
        tags: [],
        packages: [],
        created_at: '2026-01-01T00:00:00.000Z',
        updated_at: '2026-01-01T00:00:00.000Z',
        last_run_at: null,
        run_count: 0,
        last_run_success: null,
        source_execution_id: null,
        version: 11,
      }),
    );
    let store: Record<string, string> = {};
    if (!onDisk) {
      cluster = await startPostgres();
      const key = join(home, 'approval.key');
      writeFileSync(key, randomBytes(32), { mode: 0o600 });
      store = { CODEXEC_STORE: await cluster.createDatabase('versions'), CODEXEC_APPROVAL_KEY_FILE: key };
    }
    server = await startServer({
      home,
      env: {
        CODEXEC_MAX_SCRIPT_VERSIONS: '3',
        CODEXEC_MAX_SCRIPT_BYTES: '2000',
        CODEXEC_POOL_SIZE: '0',
        ...store,
      },
    });
  }, 60_000);
  afterAll(async () => {
    await server.close();
    await cluster?.stop();
    rmSync(home, { recursive: true, force: true });
  });

  it('keeps the newest versions and says how many each save pruned', async () => {
    const pruned: unknown[] = [];
    for (let v = 1; v <= 6; v++) pruned.push((await save('counter', `echo v${v}`)).value.pruned_versions);
    expect(pruned).toEqual([0, 0, 0, 1, 1, 1]);
    if (onDisk)
      expect(readdirSync(join(home, 'scripts', 'counter', 'versions')).sort()).toEqual(['4.sh', '5.sh']);
    const current = await call('get_script', { name: 'counter' });
    expect(current.value).toMatchObject({ version: 6, earlier_versions: 2, code: 'echo v6' });
    expect((await call('get_script', { name: 'counter', version: 4 })).value.code).toBe('echo v4');
    const gone = await call('get_script', { name: 'counter', version: 3 });
    expect(gone.value).toMatchObject({ success: false, code: 'NOT_FOUND' });
    expect(gone.value.error).toContain('4-5');
  });

  it.runIf(onDisk)('prunes the history an earlier version kept unbounded at the next save', async () => {
    const saved = await save('old-history', 'echo 12');
    expect(saved.value).toMatchObject({ success: true, version: 12, pruned_versions: 9 });
    expect(readdirSync(join(home, 'scripts', 'old-history', 'versions')).sort()).toEqual(['10.sh', '11.sh']);
    expect((await call('get_script', { name: 'old-history', version: 11 })).value.code).toBe('echo 11\n');
  });

  it('refuses code over CODEXEC_MAX_SCRIPT_BYTES, counted in UTF-8 bytes, keeping the script', async () => {
    expect((await save('sized', `echo ${'é'.repeat(997)}`)).value.success).toBe(true); // 1999 bytes
    const refused = await save('sized', `echo ${'é'.repeat(998)}`); // 1003 characters, 2001 bytes
    expect(refused.isError).toBe(true);
    expect(refused.value.code).toBe('LIMIT_REACHED');
    expect(refused.value.error).toContain('CODEXEC_MAX_SCRIPT_BYTES');
    expect((await call('get_script', { name: 'sized' })).value).toMatchObject({ version: 1 });
  });
});
