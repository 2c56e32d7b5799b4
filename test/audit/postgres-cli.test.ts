// `codexec audit verify` (the real CLI, dist/cli.js) with CODEXEC_STORE=postgres://…
// checks every replica's chain under the key derived from CODEXEC_APPROVAL_KEY_FILE, and exits 1
// naming the chain and seq of a tampered row; the key file is checked (present, not readable by
// others, 32 bytes or more) by the CLI and by a server, which refuse to start without it.
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { PgAuditTrail } from '../../src/audit/postgres/index.js';
import type { AuditAttempt } from '../../src/policy/index.js';
import { deriveKey, loadApprovalKey, Postgres } from '../../src/store/index.js';
import { startHttp } from '../helpers/http.js';
import { startPostgres, type TestPostgres } from '../helpers/postgres.js';
import { baseEnv, CLI, tempDir } from '../helpers/server.js';

let cluster: TestPostgres;
let dir: string;
let keyFile: string;
let url: string;

beforeAll(async () => {
  cluster = await startPostgres();
  dir = tempDir('codexec-pg-cli-');
  keyFile = join(dir, 'approval.key');
  writeFileSync(keyFile, randomBytes(32), { mode: 0o600 });
  url = await cluster.createDatabase('audit');
  // Two replicas' chains, written as a server writes them (the key derived from the shared one).
  const key = deriveKey(loadApprovalKey(keyFile), 'audit');
  const pg = new Postgres(url);
  for (const chainId of ['replica-a', 'replica-b']) {
    const trail = new PgAuditTrail({ pg, key, chainId, retentionDays: 30 });
    for (let n = 1; n <= 4; n++) await trail.record(attempt(n));
    await trail.close();
  }
  await pg.close();
}, 60_000);
afterAll(async () => {
  await cluster?.stop();
  rmSync(dir, { recursive: true, force: true });
});

const attempt = (n: number): AuditAttempt => ({
  tool: 'execute_code',
  execution_id: `exec_${n.toString(16).padStart(12, '0')}`,
  session_id: null,
  runtime: 'bash',
  input_code: `echo ${n}`,
  output_summary: `${n}\n`,
  exit_code: 0,
  duration_ms: 3,
  approved: true,
  approved_by: 'auto',
  rule: null,
  principal: 'local',
  tool_calls: null,
});

const homes: string[] = [];
afterEach(() => {
  for (const home of homes.splice(0)) rmSync(home, { recursive: true, force: true });
});

function verify(env: Record<string, string>, ...args: string[]) {
  const home = tempDir();
  homes.push(home);
  const out = spawnSync(process.execPath, [CLI, 'audit', 'verify', ...args], {
    env: { ...baseEnv(home), ...env },
    encoding: 'utf8',
  });
  return { code: out.status, stdout: out.stdout, stderr: out.stderr };
}

describe('codexec audit verify on postgres', () => {
  it('reports every chain intact, then names the chain and seq of a tampered row', async () => {
    const env = { CODEXEC_STORE: url, CODEXEC_APPROVAL_KEY_FILE: keyFile };
    const ok = verify(env);
    expect(ok.stderr).toBe('');
    expect(ok.code).toBe(0);
    expect(ok.stdout).toMatch(/^audit chains intact: 8 entries in 2 chains on postgres:\/\//);
    expect(ok.stdout).toMatch(/chain replica-a: intact, 4 entries \(seq 1\.\.4\)/);
    expect(ok.stdout).toMatch(/chain replica-b: intact, 4 entries \(seq 1\.\.4\)/);
    const json = JSON.parse(verify(env, '--json').stdout);
    expect(json).toMatchObject({ ok: true, store: 'postgres', entries: 8 });

    const pg = new Postgres(url);
    try {
      await pg.query("DELETE FROM codexec_audit_entries WHERE chain_id = 'replica-b' AND seq = 2");
      const broken = verify(env);
      expect(broken.code).toBe(1);
      expect(broken.stdout).toMatch(/^audit chains broken: 1 of 2 chains/);
      expect(broken.stdout).toMatch(/chain replica-a: intact/);
      expect(broken.stdout).toMatch(
        /chain replica-b: broken at seq 2: missing .*deleted \(1 entries before it verified\)/,
      );
      expect(JSON.parse(verify(env, '--json').stdout).bad).toMatchObject({ chain: 'replica-b', seq: 2 });
    } finally {
      await pg.close();
    }
  });

  it('refuses a key file others can read, one too short, and none at all (exit 2, naming the setting)', () => {
    const open = join(dir, 'open.key');
    writeFileSync(open, randomBytes(32), { mode: 0o644 });
    const short = join(dir, 'short.key');
    writeFileSync(short, randomBytes(16), { mode: 0o600 });
    for (const [file, why] of [
      [open, /CODEXEC_APPROVAL_KEY_FILE: .*open\.key can be read by others/],
      [short, /CODEXEC_APPROVAL_KEY_FILE: .*short\.key has 16 bytes; a key needs at least 32/],
    ] as const) {
      const out = verify({ CODEXEC_STORE: url, CODEXEC_APPROVAL_KEY_FILE: file });
      expect(out.code).toBe(2);
      expect(out.stderr).toMatch(why);
    }
    const none = verify({ CODEXEC_STORE: url });
    expect(none.code).toBe(2);
    expect(none.stderr).toMatch(/CODEXEC_APPROVAL_KEY_FILE: required with a postgres CODEXEC_STORE/);
    // A key other than the one that signed: every chain fails, at its first entry.
    const other = join(dir, 'other.key');
    writeFileSync(other, randomBytes(32), { mode: 0o600 });
    const wrong = verify({ CODEXEC_STORE: url, CODEXEC_APPROVAL_KEY_FILE: other });
    expect(wrong.code).toBe(1);
    expect(wrong.stdout).toMatch(/chain replica-a: broken at seq 0: the chain's start fails its HMAC/);
  });

  it('exits 2 when the database cannot be read, saying which (password hidden)', () => {
    const out = verify({
      CODEXEC_STORE: 'postgres://codexec:secret@127.0.0.1:1/none',
      CODEXEC_APPROVAL_KEY_FILE: keyFile,
    });
    expect(out.code).toBe(2);
    expect(out.stderr).toMatch(
      /cannot read the audit chains from postgres:\/\/codexec:\*\*\*@127\.0\.0\.1:1\/none/,
    );
    expect(out.stderr).not.toContain('secret');
  });
});

describe('serve --http with a postgres store: the approval key file', () => {
  const refused = async (env: Record<string, string>) => {
    const home = tempDir();
    homes.push(home);
    const error = await startHttp({
      home,
      env: { CODEXEC_STORE: url, CODEXEC_HTTP_TOKEN: 'tok-0123456789abcdef', ...env },
    }).then(
      async (server) => {
        await server.stop();
        throw new Error('the server started');
      },
      (caught: Error) => caught,
    );
    return error.message;
  };

  it('refuses to start without one, with one others can read, and with one too short (exit 2)', async () => {
    expect(await refused({})).toMatch(/^server exited 2: codexec: CODEXEC_APPROVAL_KEY_FILE: required/);
    const open = join(dir, 'serve-open.key');
    writeFileSync(open, randomBytes(32), { mode: 0o644 });
    expect(await refused({ CODEXEC_APPROVAL_KEY_FILE: open })).toMatch(
      /^server exited 2: codexec: CODEXEC_APPROVAL_KEY_FILE: .*serve-open\.key can be read by others/,
    );
    const short = join(dir, 'serve-short.key');
    writeFileSync(short, randomBytes(31), { mode: 0o600 });
    expect(await refused({ CODEXEC_APPROVAL_KEY_FILE: short })).toMatch(
      /^server exited 2: codexec: CODEXEC_APPROVAL_KEY_FILE: .*serve-short\.key has 31 bytes/,
    );
  });
});
