// `codexec doctor` on a postgres store: the database answers, the replicas registered; and the
// settings a postgres store needs stop start-up when missing or unsafe.
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrateReplicas, NOW_MS, Postgres } from '../../src/store/index.js';
import { startPostgres, type TestPostgres } from '../helpers/postgres.js';
import { baseEnv, CLI, tempDir } from '../helpers/server.js';

let cluster: TestPostgres;
beforeAll(async () => {
  cluster = await startPostgres();
}, 60_000);
afterAll(() => cluster?.stop());

function cli(args: string[], env: Record<string, string>) {
  return spawnSync(process.execPath, [CLI, ...args], { env, encoding: 'utf8', timeout: 60_000 });
}

describe('a postgres store', () => {
  it('doctor shows the database and hides its password', () => {
    const home = tempDir();
    const key = join(home, 'approval.key');
    writeFileSync(key, randomBytes(32), { mode: 0o600 });
    const url = cluster.url.replace('codexec@', 'codexec:s3cret@');
    const result = cli(['doctor'], { ...baseEnv(home), CODEXEC_STORE: url, CODEXEC_APPROVAL_KEY_FILE: key });
    expect(result.stdout).toMatch(/postgres: +postgres:\/\/codexec:\*\*\*@127\.0\.0\.1/);
    expect(result.stdout).not.toContain('s3cret');
    expect(result.stdout).toMatch(/OK +database +PostgreSQL 1\d/);
    expect(result.stdout).toMatch(/replicas registered: +0/);
  });

  it('doctor without the key reports it and all else it checks; a replica silent over 10 s is dead', async () => {
    const url = await cluster.createDatabase('doctor_replicas');
    const pg = new Postgres(url);
    try {
      await migrateReplicas(pg);
      await pg.query(
        `INSERT INTO codexec_replicas (replica_id, url, started_ms, heartbeat_ms) VALUES
         ('r-live', 'http://10.0.0.1:8080', ${NOW_MS}, ${NOW_MS}),
         ('r-gone', 'http://10.0.0.2:8080', ${NOW_MS} - 60000, ${NOW_MS} - 13000)`,
      );
    } finally {
      await pg.close();
    }
    const result = cli(['doctor'], { ...baseEnv(tempDir()), CODEXEC_STORE: url });
    expect(result.status).toBe(2);
    expect(result.stdout).toMatch(
      /missing +configuration +CODEXEC_APPROVAL_KEY_FILE: required with a postgres CODEXEC_STORE.*\(a server would not start\)/,
    );
    expect(result.stdout).toMatch(/OK +database +PostgreSQL 1\d/);
    expect(result.stdout).toMatch(/r-live at http:\/\/10\.0\.0\.1:8080: live, heard \d+ ms ago/);
    expect(result.stdout).toMatch(
      /r-gone at http:\/\/10\.0\.0\.2:8080: DEAD \(silent over 10 s\), heard 1\d{4} ms ago/,
    );
    expect(result.stdout).toContain('namespace sandbox layers'); // and on, to the end
    expect(result.stdout).toContain('interpreters');
  });

  it('refuses to serve without CODEXEC_APPROVAL_KEY_FILE, or with a key others can read or too short', () => {
    const home = tempDir();
    const env = { ...baseEnv(home), CODEXEC_STORE: cluster.url };
    const missing = cli(['serve'], env);
    expect(missing.status).toBe(2);
    expect(missing.stderr).toContain('CODEXEC_APPROVAL_KEY_FILE: required with a postgres CODEXEC_STORE');
    const open = join(home, 'open.key');
    writeFileSync(open, randomBytes(32), { mode: 0o644 });
    const readable = cli(['serve'], { ...env, CODEXEC_APPROVAL_KEY_FILE: open });
    expect(readable.status).toBe(2);
    expect(readable.stderr).toMatch(/CODEXEC_APPROVAL_KEY_FILE: .* can be read by others/);
    const short = join(home, 'short.key');
    writeFileSync(short, randomBytes(8), { mode: 0o600 });
    const tooShort = cli(['serve'], { ...env, CODEXEC_APPROVAL_KEY_FILE: short });
    expect(tooShort.status).toBe(2);
    expect(tooShort.stderr).toMatch(/CODEXEC_APPROVAL_KEY_FILE: .* has 8 bytes/);
  });

  it('refuses a store that is neither sqlite nor a postgres URL', () => {
    const result = cli(['serve'], { ...baseEnv(tempDir()), CODEXEC_STORE: 'mysql://x' });
    expect(result.status).toBe(2);
    expect(result.stderr).toContain('CODEXEC_STORE');
  });
});
