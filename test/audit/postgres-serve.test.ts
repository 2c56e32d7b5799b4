// The audit over replicas, end to end: two real `serve --http` replicas on one PostgreSQL database, each
// running code for its clients, write one audit chain each (and no audit files); `codexec audit
// verify` and the dashboard's verify (an admin's) show both chains intact, then name a tampered row.
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Postgres } from '../../src/store/index.js';
import { connectHttp, type HttpServer, startHttp } from '../helpers/http.js';
import { startPostgres, type TestPostgres } from '../helpers/postgres.js';
import { baseEnv, CLI, callTool, tempDir } from '../helpers/server.js';

const ALICE = 'alice-token-0123456789';
const CAROL = 'carol-token-0123456789'; // CODEXEC_HTTP_ADMINS

let cluster: TestPostgres;
let dir: string;
let env: Record<string, string>;
const replicas: HttpServer[] = [];

beforeAll(async () => {
  cluster = await startPostgres();
  dir = tempDir('codexec-pg-serve-');
  const keyFile = join(dir, 'approval.key');
  writeFileSync(keyFile, randomBytes(32), { mode: 0o600 });
  const tokens = join(dir, 'tokens.json');
  writeFileSync(tokens, JSON.stringify({ alice: ALICE, carol: CAROL }));
  env = { CODEXEC_STORE: await cluster.createDatabase('replicas'), CODEXEC_APPROVAL_KEY_FILE: keyFile };
  for (let i = 0; i < 2; i++)
    replicas.push(
      await startHttp({ env: { ...env, CODEXEC_HTTP_TOKENS: tokens, CODEXEC_HTTP_ADMINS: 'carol' } }),
    );
}, 60_000);
afterAll(async () => {
  await Promise.all(replicas.map((replica) => replica.stop()));
  for (const replica of replicas) rmSync(replica.home, { recursive: true, force: true });
  await cluster?.stop();
  rmSync(dir, { recursive: true, force: true });
});

function verify(...args: string[]) {
  const home = tempDir();
  try {
    const out = spawnSync(process.execPath, [CLI, 'audit', 'verify', ...args], {
      env: { ...baseEnv(home), ...env },
      encoding: 'utf8',
    });
    return { code: out.status, stdout: out.stdout, stderr: out.stderr };
  } finally {
    rmSync(home, { recursive: true, force: true });
  }
}

const api = async (replica: HttpServer, path: string, token: string, method = 'GET') => {
  const response = await fetch(new URL(path, replica.url), {
    method,
    headers: { authorization: `Bearer ${token}` },
  });
  return (await response.json()) as Record<string, unknown>;
};

describe('two serve --http replicas on one database', () => {
  it('keep a chain each; verify (CLI and dashboard) sees both, then names a tampered row', async () => {
    for (const [i, replica] of replicas.entries()) {
      const client = await connectHttp(replica.url, ALICE, i === 0 ? 'legacy' : 'modern');
      try {
        for (let n = 0; n < 3; n++) {
          const run = await callTool<{ stdout: string }>(client, 'execute_code', {
            language: 'bash',
            code: `echo replica-${i}-run-${n}`,
          });
          expect(run.value.stdout).toBe(`replica-${i}-run-${n}\n`);
        }
      } finally {
        await client.close();
      }
      // No audit files: the trail lives in the database.
      const logs = join(replica.home, 'logs');
      expect(existsSync(logs) ? readdirSync(logs).filter((name) => name.startsWith('audit-')) : []).toEqual(
        [],
      );
    }
    const ok = verify('--json');
    expect(ok.stderr).toBe('');
    expect(ok.code).toBe(0);
    const report = JSON.parse(ok.stdout);
    expect(report).toMatchObject({ ok: true, store: 'postgres', entries: 6 });
    expect(report.chains).toHaveLength(2);
    expect(report.chains.map((chain: { entries: number }) => chain.entries)).toEqual([3, 3]);
    const chainIds: string[] = report.chains.map((chain: { chain_id: string }) => chain.chain_id);
    for (const replica of replicas)
      expect(chainIds.some((id) => id.includes(`-${replica.child.pid}-`))).toBe(true);

    // The dashboard, on either replica: an admin verifies every chain; the view shows both replicas' runs.
    const dashboard = await api(replicas[1] as HttpServer, '/api/audit/verify', CAROL, 'POST');
    expect(dashboard).toMatchObject({ ok: true, store: 'postgres', entries: 6 });
    const view = (await api(replicas[0] as HttpServer, '/api/audit', ALICE)).entries as Array<{
      input_code: string;
    }>;
    expect(view.map((entry) => entry.input_code).sort()).toEqual(
      [0, 1].flatMap((i) => [0, 1, 2].map((n) => `echo replica-${i}-run-${n}`)).sort(),
    );
    expect(await api(replicas[0] as HttpServer, '/api/audit/verify', ALICE, 'POST')).toMatchObject({
      error: { code: 'FORBIDDEN' },
    });

    // Someone with the database but not the key edits what replica 1's second run was.
    const pg = new Postgres(env.CODEXEC_STORE as string);
    const victim = chainIds.find((id) => id.includes(`-${replicas[1]?.child.pid}-`)) as string;
    try {
      await pg.query(
        "UPDATE codexec_audit_entries SET entry = replace(entry, 'replica-1-run-1', 'harmless') WHERE chain_id = $1 AND seq = 2",
        [victim],
      );
    } finally {
      await pg.close();
    }
    const broken = verify();
    expect(broken.code).toBe(1);
    expect(broken.stdout).toContain(`chain ${victim}: broken at seq 2: hash does not match the entry`);
    expect(await api(replicas[0] as HttpServer, '/api/audit/verify', CAROL, 'POST')).toMatchObject({
      ok: false,
      bad: { chain: victim, seq: 2 },
    });
  });
});
