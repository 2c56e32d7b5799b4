// Replicas over one PostgreSQL (scale-out): three real `serve --http` processes, each
// with its own CODEXEC_HOME, one database and one approval key. A session lives in the replica
// that started it; a call naming it through another replica is forwarded there (signed as the
// caller's principal, never with its token), in both eras, progress included; another principal
// gets SESSION_NOT_FOUND; the owner SIGKILLed, the session is SESSION_LOST while the others serve;
// list_sessions through any replica shows the caller's sessions on every live one; requests
// claiming to come from a replica are refused unless signed for that replica, fresh and never
// used before by any replica, judged on their head before a byte of their body is read.
import { randomBytes } from 'node:crypto';
import { chmodSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import type { Client } from '@modelcontextprotocol/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SIGNED, signRequest } from '../../src/server/http/replica-auth.js';
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
let replicaEnv: Record<string, string>;
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
  replicaEnv = {
    CODEXEC_HTTP_TOKENS: tokens,
    CODEXEC_STORE: store,
    CODEXEC_APPROVAL_KEY_FILE: keyFile,
    CODEXEC_POOL_SIZE: '0',
  };
  for (let i = 0; i < 3; i++) replicas.push(await startHttp({ env: replicaEnv }));
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

  it("answers a 2025-era MCP session's id on another replica 404; the session goes on on its own", async () => {
    const headers = (id?: string) => ({
      authorization: `Bearer ${ALICE}`,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      ...(id && { 'mcp-session-id': id }),
    });
    const initialize = JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
    });
    const [first, second] = replicas as [HttpServer, HttpServer];
    const opened = await fetch(first.url, { method: 'POST', headers: headers(), body: initialize });
    await opened.body?.cancel();
    const id = opened.headers.get('mcp-session-id') ?? '';
    expect(id).not.toBe('');
    const ping = JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'ping' });
    const elsewhere = await fetch(second.url, { method: 'POST', headers: headers(id), body: ping });
    expect(elsewhere.status).toBe(404);
    expect(await elsewhere.json()).toMatchObject({ error: { message: 'Session not found' } });
    const home = await fetch(first.url, { method: 'POST', headers: headers(id), body: ping });
    expect(home.status).toBe(200);
    await home.body?.cancel();
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

  const key = () => deriveKey(loadApprovalKey(keyFile), 'replica');
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
  /** Headers signing `payload` for `target` (a replica's index, or an id), as a replica would. */
  const sign = async (
    payload: string,
    target: number | string,
    options: { principal?: string; path?: string; signer?: Uint8Array; time?: number } = {},
  ) =>
    signRequest(
      options.signer ?? key(),
      { method: 'POST', path: options.path ?? '/mcp', body: Buffer.from(payload) },
      options.principal ?? 'alice',
      typeof target === 'string' ? target : await idOf(target),
      options.time,
    );

  it('serves a signed request as the principal it names, once', async () => {
    const signed = await sign(body(1), 0);
    const answer = await post(0, body(1), signed);
    expect(answer.status).toBe(200);
    expect(await answer.text()).toContain('"sessions"');
    expect((await post(0, body(1), signed)).status).toBe(401); // replayed as is
  });

  it('refuses forged, old, changed and misdirected ones', async () => {
    const forged = await sign(body(2), 0, { signer: randomBytes(32) });
    expect((await post(0, body(2), forged)).status).toBe(401);
    const changed = await sign(body(3), 0);
    expect((await post(0, body(4), changed)).status).toBe(401); // its body swapped for another
    const otherPrincipal = { ...(await sign(body(5), 0)), [SIGNED.principal]: 'bob' };
    expect((await post(0, body(5), otherPrincipal)).status).toBe(401);
    const stale = await sign(body(6), 0, { time: Date.now() - 31_000 });
    expect((await post(0, body(6), stale)).status).toBe(401);
    const otherPath = await sign(body(7), 0, { path: '/replica/sessions' });
    expect((await post(0, body(7), otherPath)).status).toBe(401);
    // A bearer token does not open the replicas' own path, nor does a token beside a bad signature.
    expect((await post(0, '', { authorization: `Bearer ${ALICE}` }, '/replica/sessions')).status).toBe(401);
    const withToken = { ...forged, authorization: `Bearer ${ALICE}` };
    expect((await post(0, body(2), withToken)).status).toBe(401);
  });

  it('refuses a signature for replica A sent to replica B, which A still serves', async () => {
    const forOne = await sign(body(8), 0);
    for (const other of [1, 2]) {
      const refused = await post(other, body(8), forOne);
      expect(refused.status).toBe(401);
      expect(await refused.text()).toContain('not a valid request from another replica');
    }
    expect((await post(0, body(8), forOne)).status).toBe(200);
  });

  it('records each nonce in the store: one another replica used is refused, and so is a replay after a restart', async () => {
    const signed = await sign(body(9), 2);
    expect((await post(2, body(9), signed)).status).toBe(200);
    const [used] = await db.query<{ expires_ms: string }>(
      'SELECT expires_ms FROM codexec_replica_nonces WHERE nonce = $1',
      [signed[SIGNED.nonce]],
    );
    expect(Number(used?.expires_ms)).toBe(Number(signed[SIGNED.time]) + 60_000);
    // A nonce some replica recorded (as if it had served it) is refused by this one.
    const fresh = await sign(body(10), 2);
    await db.query('INSERT INTO codexec_replica_nonces (nonce, expires_ms) VALUES ($1, $2)', [
      fresh[SIGNED.nonce],
      Date.now() + 60_000,
    ]);
    expect((await post(2, body(10), fresh)).status).toBe(401);
    // Restarted, the replica remembers nothing of its own, and still refuses the replay.
    const old = replicas[2] as HttpServer;
    await old.stop();
    rmSync(old.home, { recursive: true, force: true });
    replicas[2] = await startHttp({ env: replicaEnv });
    const replayed = await post(2, body(9), signed);
    expect(replayed.status).toBe(401);
  });

  it('answers an unsigned request carrying replica headers before reading its 60 MB body', async () => {
    const { status, sentBeforeAnswer, closed } = await pushBody(0, 60 * MB, [
      `${SIGNED.principal}: alice`,
      `${SIGNED.signature}: ${'f'.repeat(64)}`,
    ]);
    expect(status).toBe(401);
    // The server answered with most of the body unsent: it never read it (the kernel's buffers
    // hold a few MB of it at most), and it cut the connection rather than read the rest.
    expect(sentBeforeAnswer).toBeLessThan(20 * MB);
    expect(closed).toBe(true);
    expect((await fetch(`${new URL((replicas[0] as HttpServer).url).origin}/healthz`)).status).toBe(200);
  });

  it('closes a never-ending body under replica headers without reading it, and one signed for less', async () => {
    const headers = [`${SIGNED.principal}: alice`, `${SIGNED.nonce}: ${'0'.repeat(32)}`];
    const unsigned = await pushBody(1, undefined, headers);
    expect(unsigned.status).toBe(401);
    expect(unsigned.closed).toBe(true);
    expect(unsigned.sent).toBeLessThan(20 * MB);
    // A valid signature for a short body: the body that follows is read no further than that.
    const signed = await sign(body(11), 1);
    const lines = Object.entries(signed).map(([name, value]) => `${name}: ${value}`);
    const longer = await pushBody(1, undefined, lines);
    // Cut as soon as the body outgrows its signed length (its answer may or may not get out first).
    expect(longer.closed).toBe(true);
    expect(longer.sent).toBeLessThan(20 * MB);
    expect([401, undefined]).toContain(longer.status);
    // Its head was admitted (its nonce is used up): the body was what it was refused for.
    const [used] = await db.query('SELECT 1 FROM codexec_replica_nonces WHERE nonce = $1', [
      signed[SIGNED.nonce],
    ]);
    expect(used).toBeDefined();
  });
});

const MB = 1024 * 1024;

interface Pushed {
  /** The status the server answered with, if its answer arrived (a reset may eat it). */
  readonly status: number | undefined;
  /** Body bytes written when the first byte of the answer came (all of them if none came). */
  readonly sentBeforeAnswer: number;
  readonly sent: number;
  /** Whether the server closed the connection before the client stopped sending. */
  readonly closed: boolean;
}

/**
 * POST /mcp to a replica with `head` lines, then write a body as fast as the connection takes it:
 * `length` bytes (Content-Length), or chunks without end (chunked) until the server closes the
 * connection or 200 MB went out.
 */
async function pushBody(replica: number, length: number | undefined, head: string[]): Promise<Pushed> {
  const { port } = new URL((replicas[replica] as HttpServer).url);
  const socket = connect(Number(port), '127.0.0.1');
  let received = '';
  let sent = 0;
  let sentBeforeAnswer: number | undefined;
  let closed = false;
  socket.on('data', (chunk: Buffer) => {
    sentBeforeAnswer ??= sent;
    received += chunk.toString('latin1');
  });
  socket.on('error', () => {}); // a reset, once the server closes with the body unread
  const gone = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  void gone.then(() => (closed = true));
  const framing = length === undefined ? 'transfer-encoding: chunked' : `content-length: ${length}`;
  const lines = ['POST /mcp HTTP/1.1', 'host: 127.0.0.1', 'content-type: application/json', ...head, framing];
  socket.write(`${lines.join('\r\n')}\r\n\r\n`);
  const chunk = Buffer.alloc(MB, 0x20);
  const framed = Buffer.concat([Buffer.from(`${MB.toString(16)}\r\n`), chunk, Buffer.from('\r\n')]);
  const limit = length ?? 200 * MB;
  while (!closed && sent < limit) {
    const ok = socket.write(length === undefined ? framed : chunk.subarray(0, Math.min(MB, limit - sent)));
    sent += Math.min(MB, limit - sent);
    if (!ok) await Promise.race([new Promise((resolve) => socket.once('drain', resolve)), gone]);
  }
  const wasClosed = closed;
  socket.destroy();
  const status = /^HTTP\/1\.1 (\d{3})/.exec(received)?.[1];
  return {
    status: status ? Number(status) : undefined,
    sentBeforeAnswer: sentBeforeAnswer ?? sent,
    sent,
    closed: wasClosed,
  };
}

/** A replica's id in the registry, by its index here. */
async function idOf(replica: number): Promise<string> {
  const origin = new URL((replicas[replica] as HttpServer).url).origin;
  const [row] = await db.query<{ replica_id: string }>(
    'SELECT replica_id FROM codexec_replicas WHERE url = $1',
    [origin],
  );
  if (!row) throw new Error(`replica ${replica} (${origin}) is not registered`);
  return row.replica_id;
}

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
