// Scale-out as an operator runs it: PostgreSQL, three `serve --http` replicas on one
// database and one approval key, the shipped deploy/haproxy.cfg in front. Through HAProxy: both
// eras, runs spread over the replicas, a session used whichever replica a request lands on, log
// search equal from every replica, a 2026-era approval whose retry lands on another replica,
// principals kept apart, the owner killed → SESSION_LOST while the others serve, and `audit
// verify` over every replica's chain catching a tampered row.
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Client } from '@modelcontextprotocol/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signRequest } from '../../src/server/http/replica-auth.js';
import { deriveKey, loadApprovalKey, Postgres } from '../../src/store/index.js';
import { startHaproxy, type TestHaproxy } from '../helpers/haproxy.js';
import { connectHttp, type HttpServer, startHttp } from '../helpers/http.js';
import { startPostgres, type TestPostgres } from '../helpers/postgres.js';
import { baseEnv, CLI, callTool, ERAS, tempDir } from '../helpers/server.js';

const ALICE = 'alice-token-0123456789';
const BOB = 'bob-token-0123456789ab';

let cluster: TestPostgres;
let db: Postgres;
let dir: string;
let keyFile: string;
let env: Record<string, string>;
let proxy: TestHaproxy;
const replicas: HttpServer[] = [];
const clients: Client[] = [];

async function through(token: string, era: (typeof ERAS)[number], approve = false): Promise<Client> {
  const client = await connectHttp(
    proxy.url,
    token,
    era,
    approve ? () => ({ action: 'accept', content: { decision: 'approve' } }) : undefined,
  );
  clients.push(client);
  return client;
}

/** Which replica (replica1…3) served each request HAProxy logged after `from` characters of its log. */
function served(from: number): string[] {
  return [
    ...proxy
      .log()
      .slice(from)
      .matchAll(/codexec_replicas\/(replica\d)/g),
  ].map((match) => match[1] as string);
}

beforeAll(async () => {
  cluster = await startPostgres();
  const store = await cluster.createDatabase('scaleout');
  db = new Postgres(store);
  dir = tempDir();
  keyFile = join(dir, 'approval.key');
  writeFileSync(keyFile, randomBytes(32), { mode: 0o600 });
  const tokens = join(dir, 'tokens.json');
  writeFileSync(tokens, JSON.stringify({ alice: ALICE, bob: BOB }));
  const quotas = join(dir, 'quotas.json');
  writeFileSync(quotas, JSON.stringify({ bob: { max_sessions: 2 } }));
  env = {
    CODEXEC_QUOTAS: quotas,
    CODEXEC_HTTP_TOKENS: tokens,
    CODEXEC_STORE: store,
    CODEXEC_APPROVAL_KEY_FILE: keyFile,
    CODEXEC_APPROVAL: 'risky',
    CODEXEC_HTTP_KEEP_ALIVE_TIMEOUT_MS: '65000',
    CODEXEC_HTTP_MAX_CONNECTIONS_PER_ADDRESS: '200',
  };
  for (let i = 0; i < 3; i++) replicas.push(await startHttp({ env }));
  proxy = await startHaproxy(replicas.map((replica) => new URL(replica.url).host));
}, 120_000);

afterAll(async () => {
  await Promise.all(clients.map((client) => client.close().catch(() => {})));
  await proxy?.stop();
  for (const replica of replicas) {
    await replica.stop();
    rmSync(replica.home, { recursive: true, force: true });
  }
  await db?.close();
  await cluster?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
}, 60_000);

describe('three replicas behind HAProxy', () => {
  it('serve both eras, runs spread over every replica, and log search is the same from each', async () => {
    const from = proxy.log().length;
    const ids: string[] = [];
    for (const era of ERAS) {
      const client = await through(ALICE, era);
      for (let i = 0; i < 4; i++) {
        const run = await callTool<{ stdout: string; execution_id: string }>(client, 'execute_code', {
          language: 'python',
          code: `print("spread-${era}-${i}")`,
        });
        expect(run.value.stdout).toBe(`spread-${era}-${i}\n`);
        ids.push(run.value.execution_id);
      }
    }
    expect(new Set(served(from))).toEqual(new Set(['replica1', 'replica2', 'replica3']));
    // Each replica's audit chain holds some of the runs: they ran on all three.
    const chains = await db.query<{ n: number }>(
      "SELECT count(DISTINCT chain_id)::int AS n FROM codexec_audit_entries WHERE entry LIKE '%spread-%'",
    );
    expect(chains[0]?.n).toBe(3);
    // The same search, asked of each replica directly, finds every run, in the same order.
    const pages = [];
    for (const replica of replicas) {
      const client = await connectHttp(replica.url, ALICE, 'modern');
      clients.push(client);
      // Each replica sends its lines to the shared index in batches (200 ms): give them a moment.
      let found: string[] = [];
      for (const until = Date.now() + 5000; found.length < ids.length && Date.now() < until; ) {
        const page = await callTool<{ results: { execution_id: string }[] }>(
          client,
          'search_execution_logs',
          {
            query: 'spread',
            limit: 50,
          },
        );
        found = page.value.results.map((result) => result.execution_id);
        if (found.length < ids.length) await new Promise((resolve) => setTimeout(resolve, 100));
      }
      pages.push(found);
      // get_execution_log of a run another replica did.
      const entry = await callTool<{ stdout: string }>(client, 'get_execution_log', { execution_id: ids[0] });
      expect(entry.value.stdout).toBe('spread-legacy-0\n');
    }
    expect(new Set(pages[0])).toEqual(new Set(ids));
    expect(pages[1]).toEqual(pages[0]);
    expect(pages[2]).toEqual(pages[0]);
  });

  it('a session is used through whichever replica each request lands on; another principal cannot', async () => {
    const alice = await through(ALICE, 'modern');
    const started = await callTool<{ session_id: string }>(alice, 'start_session', { language: 'python' });
    const id = started.value.session_id;
    const from = proxy.log().length;
    for (let i = 1; i <= 6; i++) {
      const sent = await callTool<{ stdout: string }>(alice, 'send_to_session', {
        session_id: id,
        code: i === 1 ? 'n = 1\nprint(n)' : 'n += 1\nprint(n)',
      });
      expect(sent.value.stdout).toBe(`${i}\n`);
    }
    expect(new Set(served(from)).size).toBe(3);
    const listed = await callTool<{ sessions: { session_id: string }[] }>(alice, 'list_sessions', {});
    expect(listed.value.sessions.map((session) => session.session_id)).toContain(id);
    const bob = await through(BOB, 'modern');
    for (let i = 0; i < 3; i++) {
      const refused = await callTool<{ code: string }>(bob, 'send_to_session', {
        session_id: id,
        code: 'print(n)',
      });
      expect(refused.value.code).toBe('SESSION_NOT_FOUND');
    }
    const bobs = await callTool<{ sessions: unknown[] }>(bob, 'list_sessions', {});
    expect(bobs.value.sessions).toEqual([]);
    const search = await callTool<{ total_count: number }>(bob, 'search_execution_logs', { query: 'spread' });
    expect(search.value.total_count).toBe(0);
  });

  it("max_sessions counts a principal's sessions on every replica", async () => {
    const direct = async (replica: number) => {
      const client = await connectHttp(replicas[replica]?.url as string, BOB, 'modern');
      clients.push(client);
      return client;
    };
    const [one, two] = [await direct(0), await direct(1)];
    const first = await callTool<{ session_id: string }>(one, 'start_session', { language: 'bash' });
    const second = await callTool<{ session_id: string }>(two, 'start_session', { language: 'bash' });
    expect(first.value.session_id).toBeDefined();
    expect(second.value.session_id).toBeDefined();
    for (const client of [one, two]) {
      const third = await callTool<{ code: string; limit: string }>(client, 'start_session', {
        language: 'bash',
      });
      expect(third.value).toMatchObject({ code: 'QUOTA_EXCEEDED', limit: 'max_sessions' });
    }
    // Closing one (through the other replica: forwarded) makes room again, on either replica.
    await callTool(one, 'close_session', { session_id: second.value.session_id });
    const again = await callTool<{ session_id: string }>(two, 'start_session', { language: 'bash' });
    expect(again.value.session_id).toBeDefined();
    for (const id of [first.value.session_id, again.value.session_id])
      await callTool(one, 'close_session', { session_id: id });
  });

  it('a 2026-era approval is answered on another replica than the one that asked', async () => {
    const client = await through(ALICE, 'modern', true);
    for (let i = 0; i < 3; i++) {
      const from = proxy.log().length;
      // A policy rule marks `curl … | sh` risky: the call returns input_required with a ticket,
      // the SDK client answers the form and retries; round robin sends the retry elsewhere.
      const run = await callTool<{ stdout: string }>(client, 'execute_code', {
        language: 'bash',
        code: `echo approved-${i}; exit 0\ncurl -s x | sh`,
      });
      expect(run.value.stdout).toBe(`approved-${i}\n`);
      const [asked, answered] = served(from);
      expect(asked).toBeDefined();
      expect(answered).toBeDefined();
      expect(answered).not.toBe(asked);
    }
  });

  it('a request signed for a replica, sent through HAProxy, reaches none as a replica call', async () => {
    const key = deriveKey(loadApprovalKey(keyFile), 'replica');
    const targets = await db.query<{ replica_id: string }>('SELECT replica_id FROM codexec_replicas');
    expect(targets).toHaveLength(3);
    const payload = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' });
    // Each replica in turn (round robin) gets each target's signature: the headers never arrive,
    // so the request is a client's without a token.
    for (const { replica_id: target } of [...targets, ...targets, ...targets]) {
      const signed = signRequest(
        key,
        { method: 'POST', path: '/mcp', body: Buffer.from(payload) },
        'alice',
        target,
      );
      const answer = await fetch(proxy.url, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          ...signed,
        },
        body: payload,
      });
      expect(answer.status).toBe(401);
      expect(await answer.text()).toContain('missing or wrong bearer token');
    }
  });

  it('the owner killed: its session is SESSION_LOST through HAProxy while the others serve; audit verify checks every chain', async () => {
    const alice = await connectHttp(replicas[2]?.url as string, ALICE, 'modern');
    clients.push(alice);
    const started = await callTool<{ session_id: string }>(alice, 'start_session', { language: 'python' });
    replicas[2]?.child.kill('SIGKILL');
    await replicas[2]?.exited;
    const viaProxy = await through(ALICE, 'modern');
    for (let i = 0; i < 4; i++) {
      // HAProxy's health check takes the dead replica out; until then a request to it is retried.
      const lost = await callTool<{ code: string; error: string }>(viaProxy, 'send_to_session', {
        session_id: started.value.session_id,
        code: 'print(1)',
      });
      expect(lost.value.code).toBe('SESSION_LOST');
      expect(lost.value.error).toContain(started.value.session_id);
      const run = await callTool<{ stdout: string }>(viaProxy, 'execute_code', {
        language: 'python',
        code: 'print(7)',
      });
      expect(run.value.stdout).toBe('7\n');
    }
    const verify = () =>
      spawnSync(process.execPath, [CLI, 'audit', 'verify'], {
        env: { ...baseEnv(tempDir()), ...env },
        encoding: 'utf8',
        timeout: 60_000,
      });
    const intact = verify();
    expect(intact.status).toBe(0);
    expect(intact.stdout).toMatch(/audit chains intact: \d+ entries in [3-9] chains/);
    expect(intact.stdout.match(/^ {2}chain .*: intact/gm)?.length ?? 0).toBeGreaterThanOrEqual(3);
    await db.query(
      `UPDATE codexec_audit_entries SET entry = replace(entry, 'print(7)', 'print(8)')
       WHERE (chain_id, seq) = (SELECT chain_id, seq FROM codexec_audit_entries WHERE entry LIKE '%print(7)%' LIMIT 1)`,
    );
    const tampered = verify();
    expect(tampered.status).toBe(1);
    expect(tampered.stdout + tampered.stderr).toMatch(/broken at seq \d+/);
  });
});
