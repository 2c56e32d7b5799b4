// The real server with CODEXEC_STORE=postgres://…: a run on one replica is found by
// search_execution_logs and get_execution_log on another replica (another CODEXEC_HOME, the same
// database) and by `codexec logs`, each principal seeing only its own.
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Client } from '@modelcontextprotocol/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectHttp, type HttpServer, startHttp } from '../helpers/http.js';
import { startPostgres, type TestPostgres } from '../helpers/postgres.js';
import { baseEnv, CLI, callTool, tempDir } from '../helpers/server.js';

interface Page {
  results: Array<{ execution_id: string; code_preview: string }>;
  total_count: number;
}

const ALICE = 'alice-token-0123456789';
const BOB = 'bob-token-0123456789ab';

let cluster: TestPostgres;
let dir: string;
let env: Record<string, string>;
const servers: HttpServer[] = [];
const clients: Client[] = [];

beforeAll(async () => {
  cluster = await startPostgres();
  dir = tempDir();
  const tokens = join(dir, 'tokens.json');
  writeFileSync(tokens, JSON.stringify({ alice: ALICE, bob: BOB }));
  const key = join(dir, 'approval.key');
  writeFileSync(key, randomBytes(32), { mode: 0o600 });
  env = {
    CODEXEC_STORE: await cluster.createDatabase('e2e'),
    CODEXEC_APPROVAL_KEY_FILE: key,
    CODEXEC_HTTP_TOKENS: tokens,
    CODEXEC_POOL_SIZE: '0',
  };
}, 60_000);

afterAll(async () => {
  await Promise.all(clients.map((client) => client.close().catch(() => {})));
  for (const server of servers) {
    await server.stop();
    rmSync(server.home, { recursive: true, force: true });
  }
  rmSync(dir, { recursive: true, force: true });
  await cluster?.stop();
});

async function replica(): Promise<HttpServer> {
  const server = await startHttp({ env });
  servers.push(server);
  return server;
}

async function client(server: HttpServer, token: string): Promise<Client> {
  const connected = await connectHttp(server.url, token, 'modern');
  clients.push(connected);
  return connected;
}

const search = async (c: Client, query: string) =>
  (await callTool<Page>(c, 'search_execution_logs', { query })).value;

describe('execution logs over PostgreSQL, through the real server', () => {
  it('finds a run from the replica that ran it and from another, for its principal only', async () => {
    const one = await replica();
    const two = await replica();
    const aliceOne = await client(one, ALICE);
    const bobOne = await client(one, BOB);
    const run = await callTool<{ execution_id: string; stdout: string }>(aliceOne, 'execute_code', {
      language: 'python',
      code: 'print("pgalice_word " + "ok")',
    });
    expect(run.value.stdout).toBe('pgalice_word ok\n');
    const id = run.value.execution_id;
    const bobRun = await callTool<{ execution_id: string }>(bobOne, 'execute_code', {
      language: 'bash',
      code: 'echo pgbob-word',
    });

    // Read-your-writes on the replica that ran it.
    expect((await search(aliceOne, 'pgalice_word')).results.map((r) => r.execution_id)).toEqual([id]);
    expect((await search(bobOne, 'pgalice_word')).total_count).toBe(0);

    // Another replica, another CODEXEC_HOME: the run is not in its files, but it is found.
    const aliceTwo = await client(two, ALICE);
    const bobTwo = await client(two, BOB);
    await expect
      .poll(async () => (await search(aliceTwo, 'pgalice word')).results.map((r) => r.execution_id), {
        timeout: 5000,
      })
      .toEqual([id]);
    const entry = await callTool<{ stdout: string; code: string; status: string }>(
      aliceTwo,
      'get_execution_log',
      {
        execution_id: id,
      },
    );
    expect(entry.value).toMatchObject({ stdout: 'pgalice_word ok\n', status: 'success' });
    expect(existsSync(join(two.home, 'logs')) ? readdirSync(join(two.home, 'logs')) : []).toEqual([]);
    expect(readdirSync(join(one.home, 'logs')).some((name) => name.startsWith('executions-'))).toBe(true);
    expect(existsSync(join(one.home, 'index.db'))).toBe(false); // the store replaces index.db

    // Principals stay apart across replicas.
    expect((await search(bobTwo, 'pgalice_word')).total_count).toBe(0);
    const refused = await callTool<{ code: string }>(bobTwo, 'get_execution_log', { execution_id: id });
    expect(refused.isError).toBe(true);
    expect(refused.value.code).toBe('NOT_FOUND');
    expect((await search(bobTwo, 'pgbob')).results.map((r) => r.execution_id)).toEqual([
      bobRun.value.execution_id,
    ]);

    // The operator's CLI, from a third home with the same store, sees everyone's.
    const cliHome = tempDir();
    try {
      const cliEnv = { ...baseEnv(cliHome), ...env };
      const page = JSON.parse(
        execFileSync(process.execPath, [CLI, 'logs', 'search', '--json', '-q', 'pgalice_word pgbob'], {
          env: cliEnv,
          encoding: 'utf8',
        }),
      ) as Page;
      expect(page.total_count).toBe(0);
      const everyone = JSON.parse(
        execFileSync(process.execPath, [CLI, 'logs', 'search', '--json', '-n', '50'], {
          env: cliEnv,
          encoding: 'utf8',
        }),
      ) as Page;
      expect(everyone.results.map((r) => r.execution_id).sort()).toEqual(
        [id, bobRun.value.execution_id].sort(),
      );
      const shown = JSON.parse(
        execFileSync(process.execPath, [CLI, 'logs', 'show', id, '--json'], {
          env: cliEnv,
          encoding: 'utf8',
        }),
      ) as { stdout: string };
      expect(shown.stdout).toBe('pgalice_word ok\n');
      expect(existsSync(join(cliHome, 'index.db'))).toBe(false);
    } finally {
      rmSync(cliHome, { recursive: true, force: true });
    }
  }, 120_000);
});
