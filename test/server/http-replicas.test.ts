// Replicas over one PostgreSQL (DESIGN §9 "Scale-out"): three real `serve --http` processes, each
// with its own CODEXEC_HOME, one database and one approval key. A session lives in the replica
// that started it; a call naming it through another replica is forwarded there (signed as the
// caller's principal, never with its token), in both eras, progress included; another principal
// gets SESSION_NOT_FOUND; the owner SIGKILLed, the session is SESSION_LOST while the others serve;
// list_sessions through any replica shows the caller's sessions on every live one; requests
// claiming to come from a replica are refused unless signed, fresh and unreplayed.
import { randomBytes } from 'node:crypto';
import { chmodSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Client } from '@modelcontextprotocol/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ReplicaAuth } from '../../src/server/http/replica-auth.js';
import { deriveKey, loadApprovalKey, Postgres } from '../../src/store/index.js';
import { connectHttp, type HttpServer, startHttp } from '../helpers/http.js';
import { freePort, startPostgres, type TestPostgres } from '../helpers/postgres.js';
import { callTool, ERAS, type Era, tempDir } from '../helpers/server.js';
import { envelope } from '../helpers/tasks.js';

const ALICE = 'alice-token-0123456789';
const BOB = 'bob-token-0123456789ab';

let cluster: TestPostgres;
let dir: string;
let keyFile: string;
let db: Postgres;
const replicas: HttpServer[] = [];
const clients: Client[] = [];

async function client(replica: number, token: string, era: Era): Promise<Client> {
  const connected = await connectHttp((replicas[replica] as HttpServer).url, token, era);
  clients.push(connected);
  return connected;
}

beforeAll(async () => {
  cluster = await startPostgres();
  const store = await cluster.createDatabase('replicas');
  db = new Postgres(store);
  dir = tempDir();
  keyFile = join(dir, 'approval.key');
  writeFileSync(keyFile, randomBytes(32), { mode: 0o600 });
  chmodSync(keyFile, 0o600);
  const tokens = join(dir, 'tokens.json');
  writeFileSync(tokens, JSON.stringify({ alice: ALICE, bob: BOB }));
  const env = {
    CODEXEC_HTTP_TOKENS: tokens,
    CODEXEC_STORE: store,
    CODEXEC_APPROVAL_KEY_FILE: keyFile,
    CODEXEC_POOL_SIZE: '0',
  };
  for (let i = 0; i < 3; i++) replicas.push(await startHttp({ env }));
}, 120_000);

afterAll(async () => {
  await Promise.all(clients.map((c) => c.close().catch(() => {})));
  for (const replica of replicas) {
    await replica.stop();
    rmSync(replica.home, { recursive: true, force: true });
  }
  await db?.close();
  await cluster?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
}, 60_000);

interface Failure {
  code: string;
  error: string;
}

/** The session directory's row for `id`, once `ready` holds for it (5 s at most). */
async function row(id: string, ready: (row?: { replica_id: string; lost_ms: string | null }) => boolean) {
  const until = Date.now() + 5000;
  for (;;) {
    const [found] = await db.query<{ replica_id: string; lost_ms: string | null }>(
      'SELECT replica_id, lost_ms FROM codexec_sessions WHERE session_id = $1',
      [id],
    );
    if (ready(found) || Date.now() > until) return found;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe('replicas: a session reached through any replica', () => {
  for (const era of ERAS) {
    it(`is used through replicas 2 and 3, its state kept (${era} era)`, async () => {
      const [one, two, three] = [
        await client(0, ALICE, era),
        await client(1, ALICE, era),
        await client(2, ALICE, era),
      ];
      const started = await callTool<{ session_id: string }>(one, 'start_session', { language: 'python' });
      const id = started.value.session_id;
      expect(await row(id, Boolean)).toMatchObject({ lost_ms: null });
      const sent = await callTool<{ success: boolean }>(two, 'send_to_session', {
        session_id: id,
        code: 'x = 1',
      });
      expect(sent.value.success).toBe(true);
      const run = await callTool<{ stdout: string }>(three, 'execute_code', {
        language: 'python',
        session_id: id,
        code: 'x += 1\nprint(x)',
      });
      expect(run.value.stdout).toBe('2\n');
      // Progress notifications come back through the forwarding replica as they happen.
      const progress: string[] = [];
      const streamed = await callTool<{ stdout: string }>(
        two,
        'send_to_session',
        {
          session_id: id,
          code: 'import time\nfor i in range(3):\n    print(f"step {x + i}")\n    time.sleep(0.3)',
        },
        { onprogress: (p) => progress.push(p.message ?? '') },
      );
      expect(streamed.value.stdout).toBe('step 2\nstep 3\nstep 4\n');
      expect(progress.join('')).toContain('step 2\n');
      const written = await callTool(two, 'write_file', {
        session_id: id,
        path: 'note.txt',
        content: `hi ${era}`,
      });
      expect(written.isError).toBe(false);
      const read = await callTool<{ content: string }>(three, 'read_file', {
        session_id: id,
        path: 'note.txt',
      });
      expect(read.value.content).toBe(`hi ${era}`);
      const made = await callTool<{ stdout: string }>(one, 'send_to_session', {
        session_id: id,
        code: 'print(open("note.txt").read(), x)',
      });
      expect(made.value.stdout).toBe(`hi ${era} 2\n`);
      const closed = await callTool<{ success: boolean }>(three, 'close_session', { session_id: id });
      expect(closed.value.success).toBe(true);
      expect(await row(id, (found) => !found)).toBeUndefined(); // gone from the directory
      const after = await callTool<Failure>(one, 'send_to_session', { session_id: id, code: 'x' });
      expect(after.value.code).toBe('SESSION_NOT_FOUND');
      const elsewhere = await callTool<Failure>(two, 'send_to_session', { session_id: id, code: 'x' });
      expect(elsewhere.value.code).toBe('SESSION_NOT_FOUND');
    });
  }

  it("answers another principal's session id as unknown, on any replica", async () => {
    const alice = await client(0, ALICE, 'modern');
    const { value } = await callTool<{ session_id: string }>(alice, 'start_session', { language: 'bash' });
    for (const replica of [0, 1, 2]) {
      const bob = await client(replica, BOB, replica === 1 ? 'legacy' : 'modern');
      const sent = await callTool<Failure>(bob, 'send_to_session', {
        session_id: value.session_id,
        code: 'id',
      });
      expect(sent.value.code).toBe('SESSION_NOT_FOUND');
      expect(sent.value.error).toBe(
        `no session ${value.session_id}; list_sessions shows the running ones, start_session makes one`,
      );
      const stdin = await callTool<Failure>(bob, 'write_stdin', {
        session_id: value.session_id,
        data: 'x\n',
      });
      expect(stdin.value.code).toBe('SESSION_NOT_FOUND');
      const closed = await callTool<Failure>(bob, 'close_session', { session_id: value.session_id });
      expect(closed.value.code).toBe('SESSION_NOT_FOUND');
    }
    const still = await callTool<{ stdout: string }>(alice, 'send_to_session', {
      session_id: value.session_id,
      code: 'echo alive',
    });
    expect(still.value.stdout).toBe('alive\n');
    await callTool(alice, 'close_session', { session_id: value.session_id });
  });
});

describe('replicas: requests between them', () => {
  it('a replica that cannot register does not serve', async () => {
    const env = {
      CODEXEC_STORE: `postgres://codexec:secret@127.0.0.1:${await freePort()}/x`,
      CODEXEC_APPROVAL_KEY_FILE: keyFile,
    };
    const refused = startHttp({ env, home: dir });
    await expect(refused).rejects.toThrow(
      /exited 2: .*cannot register this replica in postgres:\/\/codexec:\*\*\*@/s,
    );
  });

  const auth = () => new ReplicaAuth(deriveKey(loadApprovalKey(keyFile), 'replica'));
  const body = (id: number) =>
    JSON.stringify({
      jsonrpc: '2.0',
      id,
      method: 'tools/call',
      params: { name: 'list_sessions', arguments: {}, _meta: envelope(false) },
    });
  const post = (replica: number, payload: string, headers: Record<string, string>, path = '/mcp') =>
    fetch(`${(replicas[replica] as HttpServer).url.replace(/\/mcp$/, '')}${path}`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-protocol-version': '2026-07-28',
        'mcp-method': 'tools/call',
        'mcp-name': 'list_sessions',
        ...headers,
      },
      body: payload,
    });
  const sign = (signer: ReplicaAuth, payload: string, principal = 'alice', path = '/mcp') =>
    signer.sign({ method: 'POST', path, body: Buffer.from(payload) }, principal);

  it('serves a signed request as the principal it names, once', async () => {
    const signed = sign(auth(), body(1));
    const answer = await post(0, body(1), signed);
    expect(answer.status).toBe(200);
    expect(await answer.text()).toContain('"sessions"');
    expect((await post(0, body(1), signed)).status).toBe(401); // replayed as is
  });

  it('refuses forged, old, changed and misdirected ones', async () => {
    const forged = sign(new ReplicaAuth(randomBytes(32)), body(2));
    expect((await post(0, body(2), forged)).status).toBe(401);
    const changed = sign(auth(), body(3));
    expect((await post(0, body(4), changed)).status).toBe(401); // its body swapped for another
    const otherPrincipal = { ...sign(auth(), body(5)), 'x-codexec-replica-principal': 'bob' };
    expect((await post(0, body(5), otherPrincipal)).status).toBe(401);
    const stale = new ReplicaAuth(deriveKey(loadApprovalKey(keyFile), 'replica'), () => Date.now() - 31_000);
    expect((await post(0, body(6), sign(stale, body(6)))).status).toBe(401);
    const otherPath = sign(auth(), body(7), 'alice', '/replica/sessions');
    expect((await post(0, body(7), otherPath)).status).toBe(401);
    // A bearer token does not open the replicas' own path, nor does a token beside a bad signature.
    expect((await post(0, '', { authorization: `Bearer ${ALICE}` }, '/replica/sessions')).status).toBe(401);
    const withToken = { ...forged, authorization: `Bearer ${ALICE}` };
    expect((await post(0, body(2), withToken)).status).toBe(401);
  });
});

describe('replicas: list_sessions and a lost owner', () => {
  const ids: Record<string, string> = {};

  it("lists the caller's sessions on every live replica, through any of them", async () => {
    for (const replica of [0, 1]) {
      const alice = await client(replica, ALICE, 'modern');
      const { value } = await callTool<{ session_id: string }>(alice, 'start_session', {
        language: 'python',
      });
      ids[`alice${replica}`] = value.session_id;
    }
    const bob = await client(1, BOB, 'legacy');
    ids.bob = (
      await callTool<{ session_id: string }>(bob, 'start_session', { language: 'bash' })
    ).value.session_id;
    for (const era of ERAS) {
      const three = await client(2, ALICE, era);
      const listed = await callTool<{ sessions: Array<{ session_id: string }> }>(three, 'list_sessions', {});
      expect(listed.value.sessions.map((s) => s.session_id).sort()).toEqual([ids.alice0, ids.alice1].sort());
    }
    const bobs = await callTool<{ sessions: Array<{ session_id: string }> }>(
      await client(2, BOB, 'modern'),
      'list_sessions',
      {},
    );
    expect(bobs.value.sessions.map((s) => s.session_id)).toEqual([ids.bob]);
  });

  it('answers SESSION_LOST for a SIGKILLed replica’s session while the others serve', async () => {
    const one = replicas[0] as HttpServer;
    const late = await callTool<{ session_id: string }>(await client(0, ALICE, 'legacy'), 'start_session', {
      language: 'bash',
    });
    one.child.kill('SIGKILL');
    await one.exited;
    for (const era of ERAS) {
      const two = await client(1, ALICE, era);
      const lost = await callTool<Failure>(two, 'send_to_session', {
        session_id: ids.alice0,
        code: 'print(1)',
      });
      expect(lost.isError).toBe(true);
      expect(lost.value.code).toBe('SESSION_LOST');
      expect(lost.value.error).toContain(ids.alice0);
      expect(lost.value.error).toContain('start_session');
      const run = await callTool<{ stdout: string }>(two, 'execute_code', {
        language: 'python',
        code: 'print(6 * 7)',
      });
      expect(run.value.stdout).toBe('42\n');
    }
    // Replica 3 learns it from the directory; its own runs and replica 2's session still work.
    const three = await client(2, ALICE, 'modern');
    const again = await callTool<Failure>(three, 'execute_code', {
      language: 'python',
      session_id: ids.alice0,
      code: 'print(1)',
    });
    expect(again.value.code).toBe('SESSION_LOST');
    const kept = await callTool<{ stdout: string }>(three, 'send_to_session', {
      session_id: ids.alice1,
      code: 'print("still here")',
    });
    expect(kept.value.stdout).toBe('still here\n');
    // To another principal the lost session is still nobody's business.
    const bob = await client(2, BOB, 'modern');
    const bobs = await callTool<Failure>(bob, 'send_to_session', {
      session_id: ids.alice0,
      code: 'print(1)',
    });
    expect(bobs.value.code).toBe('SESSION_NOT_FOUND');
    const listed = await callTool<{ sessions: Array<{ session_id: string }> }>(three, 'list_sessions', {});
    expect(listed.value.sessions.map((s) => s.session_id)).toEqual([ids.alice1]);
    expect((await row(ids.alice0 as string, Boolean))?.lost_ms).not.toBeNull();
    // Its heartbeat over (as 10 s after a death): lost without trying to connect.
    const owner = (await row(late.value.session_id, Boolean))?.replica_id;
    await db.query('UPDATE codexec_replicas SET heartbeat_ms = 0 WHERE replica_id = $1', [owner]);
    const dead = await callTool<Failure>(three, 'send_to_session', {
      session_id: late.value.session_id,
      code: 'id',
    });
    expect(dead.value.code).toBe('SESSION_LOST');
    expect((await row(late.value.session_id, Boolean))?.lost_ms).not.toBeNull();
  });

  it("answers SESSION_LOST for a stopped replica's sessions", async () => {
    await (replicas[1] as HttpServer).stop();
    const three = await client(2, ALICE, 'legacy');
    const lost = await callTool<Failure>(three, 'send_to_session', {
      session_id: ids.alice1,
      code: 'print(1)',
    });
    expect(lost.value.code).toBe('SESSION_LOST');
    const listed = await callTool<{ sessions: unknown[] }>(three, 'list_sessions', {});
    expect(listed.value.sessions).toEqual([]);
  });
});
