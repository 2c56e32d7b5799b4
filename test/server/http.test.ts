// `codexec serve --http` over real HTTP: the SDK's Streamable HTTP client in both eras, and raw
// fetch for what a client library would hide (401, 403, 413, /healthz, the token file's mode).
import { execFileSync, spawnSync } from 'node:child_process';
import { readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectHttp, type HttpServer, startHttp } from '../helpers/http.js';
import { baseEnv, CLI, callTool, ERAS, tempDir } from '../helpers/server.js';

const TOKEN = 'single-token-0123456789abcdef';
const mcpInit = (headers: Record<string, string> = {}, body?: string) =>
  ({
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      ...headers,
    },
    body:
      body ??
      JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: {
          protocolVersion: '2025-06-18',
          capabilities: {},
          clientInfo: { name: 'raw', version: '1' },
        },
      }),
  }) satisfies RequestInit;

describe('serve --http with a single token (CODEXEC_HTTP_TOKEN)', () => {
  let server: HttpServer;
  beforeAll(async () => {
    server = await startHttp({ env: { CODEXEC_HTTP_TOKEN: TOKEN, CODEXEC_HTTP_MAX_BODY_BYTES: '65536' } });
  });
  afterAll(async () => {
    await server.stop();
    rmSync(server.home, { recursive: true, force: true });
  });

  it('answers /healthz without a token', async () => {
    const response = await fetch(new URL('/healthz', server.url));
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ status: 'ok' });
  });

  it('refuses a missing or wrong token with 401 and WWW-Authenticate: Bearer', async () => {
    const attempts: Record<string, string>[] = [
      {},
      { authorization: `Bearer ${TOKEN}x` },
      { authorization: `Basic ${TOKEN}` },
    ];
    for (const headers of attempts) {
      const response = await fetch(server.url, mcpInit(headers));
      expect(response.status).toBe(401);
      expect(response.headers.get('www-authenticate')).toMatch(/^Bearer\b/);
    }
    const ok = await fetch(server.url, mcpInit({ authorization: `Bearer ${TOKEN}` }));
    expect(ok.status).toBe(200);
  });

  it('refuses a foreign Origin with 403, and a non-loopback Host on a loopback bind', async () => {
    const auth = { authorization: `Bearer ${TOKEN}` };
    const origin = await fetch(server.url, mcpInit({ ...auth, origin: 'https://evil.example' }));
    expect(origin.status).toBe(403);
    expect(await origin.text()).toContain('https://evil.example');
    // fetch will not forge Host; a raw request does what a rebinding browser would.
    const port = new URL(server.url).port;
    const raw = execFileSync('curl', [
      '-s',
      '-o',
      '/dev/null',
      '-w',
      '%{http_code}',
      '-H',
      `Host: evil.example:${port}`,
      '-H',
      `Authorization: Bearer ${TOKEN}`,
      '-X',
      'POST',
      '-d',
      '{}',
      server.url,
    ]).toString();
    expect(raw).toBe('403');
  });

  it('refuses a body over CODEXEC_HTTP_MAX_BODY_BYTES with 413', async () => {
    const big = JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'tools/call',
      params: { name: 'execute_code', arguments: { language: 'python', code: `#${'x'.repeat(70_000)}` } },
    });
    const response = await fetch(server.url, mcpInit({ authorization: `Bearer ${TOKEN}` }, big));
    expect(response.status).toBe(413);
    expect(await response.text()).toContain('CODEXEC_HTTP_MAX_BODY_BYTES');
  });

  it('answers malformed bodies as JSON-RPC says, by id when readable, and serves on', async () => {
    const auth = { authorization: `Bearer ${TOKEN}` };
    const notJson = await fetch(server.url, mcpInit(auth, 'not json'));
    expect(notJson.status).toBe(400);
    expect(await notJson.json()).toMatchObject({ id: null, error: { code: -32700 } });
    const badParams = JSON.stringify({ jsonrpc: '2.0', id: 5, method: 'tools/call', params: 5 });
    const invalid = await fetch(server.url, mcpInit(auth, badParams));
    expect(await invalid.json()).toMatchObject({ id: 5, error: { code: -32600 } });
    expect((await fetch(server.url, mcpInit(auth))).status).toBe(200);
  });

  it('asks for approval over HTTP (2026 era): the retry that carries the answer reaches another per-request server', async () => {
    const gated = await startHttp({ env: { CODEXEC_HTTP_TOKEN: TOKEN, CODEXEC_APPROVAL: 'ask' } });
    const forms: string[] = [];
    const client = await connectHttp(gated.url, TOKEN, 'modern', (params) => {
      forms.push(params.message);
      return { action: 'accept', content: { decision: 'approve' } };
    });
    try {
      const { value } = await callTool<{ success: boolean; stdout: string }>(client, 'execute_code', {
        language: 'python',
        code: 'print(6 * 7)',
      });
      expect(value).toMatchObject({ success: true, stdout: '42\n' });
      expect(forms).toHaveLength(1);
      expect(forms[0]).toContain('print(6 * 7)');
    } finally {
      await client.close();
      await gated.stop();
    }
  });

  it("over HTTP, trust lasts across a principal's requests and is never another principal's", async () => {
    const dir = tempDir();
    const tokens = join(dir, 'tokens.json');
    writeFileSync(tokens, JSON.stringify({ alice: 'alice-token-0123456789', bob: 'bob-token-0123456789ab' }));
    const gated = await startHttp({ env: { CODEXEC_HTTP_TOKENS: tokens, CODEXEC_APPROVAL: 'ask' } });
    const asked = { alice: 0, bob: 0 };
    let answer = 'deny';
    const schemas: string[] = [];
    const alice = await connectHttp(gated.url, 'alice-token-0123456789', 'modern', (params) => {
      asked.alice += 1;
      schemas.push(JSON.stringify(params.requestedSchema));
      return { action: 'accept', content: { decision: answer } };
    });
    const bob = await connectHttp(gated.url, 'bob-token-0123456789ab', 'modern', () => {
      asked.bob += 1;
      return { action: 'accept', content: { decision: 'deny' } };
    });
    const legacyForms: string[] = [];
    const legacy = await connectHttp(gated.url, 'alice-token-0123456789', 'legacy', (params) => {
      legacyForms.push(params.message);
      return { action: 'accept', content: { decision: 'deny' } };
    });
    const run = (client: typeof alice, code: string) =>
      callTool<{ success: boolean; stdout: string; code: string; error: string }>(client, 'execute_code', {
        language: 'python',
        code,
      });
    try {
      const denied = await run(alice, 'print("denied")');
      expect(denied.value.code).toBe('APPROVAL_DENIED');
      answer = 'approve_trust_session';
      expect((await run(alice, 'print(1)')).value.stdout).toBe('1\n');
      expect(asked.alice).toBe(2);
      // The form says so: the principal's trust, on every connection, until the server stops.
      expect(schemas[1]).toContain(
        'for this principal, on every connection, from now on until the server stops',
      );
      expect(schemas[1]).not.toContain('on this connection');
      // Each request is served by a server of its own: the trust is the principal's.
      expect((await run(alice, 'print(2)')).value.stdout).toBe('2\n');
      expect(asked.alice).toBe(2);
      const bobs = await run(bob, 'print(3)');
      expect(bobs.value.code).toBe('APPROVAL_DENIED');
      expect(asked.bob).toBe(1);
      // A 2025-era client is asked through its MCP session, and its answer holds (bash: alice
      // trusted python runs, from any of her connections, this session's too).
      const legacyRun = await callTool<{ code: string; error: string }>(legacy, 'execute_code', {
        language: 'bash',
        code: 'echo 4',
      });
      expect(legacyRun.value.code).toBe('APPROVAL_DENIED');
      expect(legacyForms).toHaveLength(1);
      expect(legacyForms[0]).toContain('echo 4');
      const trusted = await callTool<{ stdout: string }>(legacy, 'execute_code', {
        language: 'python',
        code: 'print(5)',
      });
      expect(trusted.value.stdout).toBe('5\n');
      expect(legacyForms).toHaveLength(1);
    } finally {
      await alice.close();
      await bob.close();
      await legacy.close();
      await gated.stop();
      rmSync(gated.home, { recursive: true, force: true });
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);

  for (const era of ERAS) {
    it(`runs code through the SDK client (${era} era), with progress over HTTP`, async () => {
      const client = await connectHttp(server.url, TOKEN, era);
      try {
        const progress: string[] = [];
        const { value } = await callTool<{ success: boolean; stdout: string }>(
          client,
          'execute_code',
          { language: 'python', code: 'import time\nprint("a", flush=True)\ntime.sleep(0.6)\nprint("b")' },
          { onprogress: (p) => progress.push(p.message ?? '') },
        );
        expect(value.success).toBe(true);
        expect(value.stdout).toBe('a\nb\n');
        expect(progress.join('')).toContain('a');
      } finally {
        await client.close();
      }
    });
  }

  it('serves 20 concurrent clients on one server', async () => {
    const runs = Array.from({ length: 20 }, async (_, i) => {
      const client = await connectHttp(server.url, TOKEN, ERAS[i % 2] ?? 'legacy');
      try {
        const { value } = await callTool<{ success: boolean; stdout: string }>(client, 'execute_code', {
          language: 'node',
          code: `console.log(${i} * 2)`,
        });
        return value.stdout.trim();
      } finally {
        await client.close();
      }
    });
    expect(await Promise.all(runs)).toEqual(Array.from({ length: 20 }, (_, i) => String(i * 2)));
  }, 120_000);
});

describe('serve --http token sources', () => {
  it('generates a token into $CODEXEC_HOME/http-token (0600), names it on stderr and accepts it', async () => {
    const root = tempDir();
    // A first start: CODEXEC_HOME does not exist yet.
    const server = await startHttp({ home: join(root, 'home') });
    try {
      const path = join(server.home, 'http-token');
      expect(statSync(path).mode & 0o777).toBe(0o600);
      expect(server.stderr()).toContain(path);
      const token = readFileSync(path, 'utf8').trim();
      expect(token.length).toBeGreaterThanOrEqual(32);
      expect(server.stderr()).not.toContain(token);
      expect((await fetch(server.url, mcpInit())).status).toBe(401);
      expect((await fetch(server.url, mcpInit({ authorization: `Bearer ${token}` }))).status).toBe(200);
    } finally {
      await server.stop();
      rmSync(root, { recursive: true, force: true });
    }
  });

  it('accepts each principal of a token file (CODEXEC_HTTP_TOKENS) and nothing else', async () => {
    const dir = tempDir();
    const file = join(dir, 'tokens.json');
    writeFileSync(file, JSON.stringify({ alice: 'alice-token-0123456789', bob: 'bob-token-0123456789ab' }));
    const server = await startHttp({ env: { CODEXEC_HTTP_TOKENS: file } });
    try {
      for (const token of ['alice-token-0123456789', 'bob-token-0123456789ab']) {
        const client = await connectHttp(server.url, token, 'modern');
        const { value } = await callTool<{ stdout: string }>(client, 'execute_code', {
          language: 'bash',
          code: 'echo ok',
        });
        expect(value.stdout).toBe('ok\n');
        await client.close();
      }
      expect(
        (await fetch(server.url, mcpInit({ authorization: 'Bearer carol-token-0123456789' }))).status,
      ).toBe(401);
    } finally {
      await server.stop();
      rmSync(server.home, { recursive: true, force: true });
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('serve --http refuses bad token settings at start-up (exit 2, naming the setting)', () => {
  it('a short CODEXEC_HTTP_TOKEN', async () => {
    await expect(startHttp({ env: { CODEXEC_HTTP_TOKEN: 'short' } })).rejects.toThrow(
      /exited 2.*CODEXEC_HTTP_TOKEN/s,
    );
  });

  it('a token file that is not JSON, where two principals share a token, or that names `local`', async () => {
    const dir = tempDir();
    try {
      const broken = join(dir, 'broken.json');
      writeFileSync(broken, '{ nope');
      await expect(startHttp({ env: { CODEXEC_HTTP_TOKENS: broken } })).rejects.toThrow(
        /exited 2.*CODEXEC_HTTP_TOKENS.*cannot read/s,
      );
      const shared = join(dir, 'shared.json');
      writeFileSync(shared, JSON.stringify({ a: 'same-token-0123456789', b: 'same-token-0123456789' }));
      await expect(startHttp({ env: { CODEXEC_HTTP_TOKENS: shared } })).rejects.toThrow(
        /exited 2.*share a token/s,
      );
      // `local` is stdio's and the command line's: a token of that name would act as them.
      const local = join(dir, 'local.json');
      writeFileSync(local, JSON.stringify({ local: 'local-token-0123456789' }));
      await expect(startHttp({ env: { CODEXEC_HTTP_TOKENS: local } })).rejects.toThrow(
        /exited 2.*CODEXEC_HTTP_TOKENS.*local.*command line/s,
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('serve --http principals own their sessions', () => {
  it("keeps a principal's session across its reconnects and hides it from another principal", async () => {
    const dir = tempDir();
    const file = join(dir, 'tokens.json');
    const alice = 'alice-token-0123456789';
    const bob = 'bob-token-0123456789ab';
    writeFileSync(file, JSON.stringify({ alice, bob }));
    const server = await startHttp({ env: { CODEXEC_HTTP_TOKENS: file } });
    try {
      const first = await connectHttp(server.url, alice, 'legacy');
      const started = await callTool<{ session_id: string }>(first, 'start_session', { language: 'python' });
      const id = started.value.session_id;
      await callTool(first, 'send_to_session', { session_id: id, code: 'x = 41' });
      await first.close();

      // The same principal, a new connection in the other era: the session and its state are there.
      const again = await connectHttp(server.url, alice, 'modern');
      const sent = await callTool<{ stdout: string }>(again, 'send_to_session', {
        session_id: id,
        code: 'print(x + 1)',
      });
      expect(sent.value.stdout).toBe('42\n');

      const other = await connectHttp(server.url, bob, 'modern');
      for (const [tool, args] of [
        ['send_to_session', { session_id: id, code: 'print(x)' }],
        ['close_session', { session_id: id }],
        ['install_package', { package: 'nothing-here', language: 'python', session_id: id }],
      ] as const) {
        const refused = await callTool<{ code: string; error: string }>(other, tool, args);
        expect(refused.isError, tool).toBe(true);
        expect(refused.value.code, tool).toBe('SESSION_NOT_FOUND');
      }
      const bobs = await callTool<{ sessions: Array<{ session_id: string }> }>(other, 'list_sessions', {});
      expect(bobs.value.sessions).toEqual([]);
      const alices = await callTool<{ sessions: Array<{ session_id: string }> }>(again, 'list_sessions', {});
      expect(alices.value.sessions.map((session) => session.session_id)).toEqual([id]);
      // Bob's refused close did not touch it.
      const still = await callTool<{ stdout: string }>(again, 'send_to_session', {
        session_id: id,
        code: 'print(x)',
      });
      expect(still.value.stdout).toBe('41\n');
      await other.close();
      await again.close();
    } finally {
      await server.stop();
      rmSync(server.home, { recursive: true, force: true });
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);
});

describe('serve without --http', () => {
  it('refuses the flags that only apply to --http (exit 2, naming them) rather than serve stdio', () => {
    const home = tempDir();
    try {
      for (const [args, named] of [
        [['--port', '9000'], '--port applies'],
        [['--host', '0.0.0.0', '--no-auth'], '--host, --no-auth apply'],
      ] as const) {
        const run = spawnSync(process.execPath, [CLI, 'serve', ...args], {
          env: baseEnv(home),
          input: '',
          encoding: 'utf8',
        });
        expect(run.status).toBe(2);
        expect(run.stderr).toContain(`${named} only to serve --http`);
        expect(run.stdout).toBe('');
      }
    } finally {
      rmSync(home, { recursive: true, force: true });
    }
  });
});

describe('serve --http --no-auth', () => {
  it('is refused on a non-loopback host (exit 2, says why)', async () => {
    await expect(startHttp({ args: ['--host', '0.0.0.0', '--no-auth'] })).rejects.toThrow(
      /exited 2.*--no-auth is only allowed on a loopback host/s,
    );
  });

  it('serves without a token on loopback', async () => {
    const server = await startHttp({ args: ['--no-auth'] });
    try {
      expect((await fetch(server.url, mcpInit())).status).toBe(200);
      expect(server.stderr()).toContain('WITHOUT authentication');
    } finally {
      await server.stop();
      rmSync(server.home, { recursive: true, force: true });
    }
  });
});

/** Whether a process with exactly these arguments runs on this machine. */
const running = (args: string) =>
  execFileSync('ps', ['-eo', 'args'])
    .toString()
    .split('\n')
    .some((line) => line.trim() === args);

/** A sleep whose arguments no other test uses, so `ps` finds exactly this run's process. */
const uniqueSleep = () => `sleep 60.${process.pid}${Math.floor(Math.random() * 1e6)}`;

const waitFor = async (check: () => boolean, what: string, everyMs = 100) => {
  for (let waited = 0; waited < 30_000; waited += everyMs) {
    if (check()) return;
    await new Promise((resolve) => setTimeout(resolve, everyMs));
  }
  throw new Error(`timed out waiting for ${what}`);
};

describe('serve --http isolation between clients', () => {
  it("a client that disconnects mid-run cancels its own run only; another client's run completes", async () => {
    const server = await startHttp({ env: { CODEXEC_HTTP_TOKEN: TOKEN } });
    try {
      const other = await connectHttp(server.url, TOKEN, 'modern');
      const sleeper = uniqueSleep();
      const aborter = new AbortController();
      const call = JSON.stringify({
        jsonrpc: '2.0',
        id: 7,
        method: 'tools/call',
        params: { name: 'execute_code', arguments: { language: 'bash', code: sleeper } },
      });
      const going = fetch(server.url, {
        ...mcpInit({ authorization: `Bearer ${TOKEN}` }, call),
        signal: aborter.signal,
      });
      await waitFor(() => running(sleeper), 'the first run to start');
      const survivor = callTool<{ success: boolean; stdout: string }>(other, 'execute_code', {
        language: 'bash',
        code: 'sleep 1; echo survived',
      });
      aborter.abort();
      await going.then((response) => response.body?.cancel()).catch(() => {});
      await waitFor(() => !running(sleeper), 'the disconnected run to be stopped');
      const { value } = await survivor;
      expect(value).toMatchObject({ success: true, stdout: 'survived\n' });
      await other.close();
    } finally {
      await server.stop();
      rmSync(server.home, { recursive: true, force: true });
    }
  }, 60_000);
});

describe('serve --http shutdown', () => {
  for (const era of ERAS) {
    it(`on SIGTERM with a run in flight (${era} era): the run is answered, logs are flushed, exit 0, nothing left`, async () => {
      const server = await startHttp({ env: { CODEXEC_HTTP_TOKEN: TOKEN } });
      try {
        const client = await connectHttp(server.url, TOKEN, era);
        const sleeper = uniqueSleep();
        const call = callTool<{ success: boolean; cancelled: boolean; exit_code: number | null }>(
          client,
          'execute_code',
          {
            language: 'bash',
            code: sleeper,
          },
        ).catch((error: Error) => error);
        await waitFor(() => running(sleeper), 'the run to start'); // really in flight when the signal comes
        server.child.kill('SIGTERM');
        // A second signal during the shutdown must not cut it short (death by signal, logs unflushed).
        await waitFor(() => server.stderr().includes('shutting down'), 'the shutdown to begin', 2);
        server.child.kill('SIGTERM');
        const code = await server.exited;
        expect(code).toBe(0);
        const outcome = await call;
        // The stopped run is answered before the connection is cut: cancelled, as operations.md says.
        if (outcome instanceof Error) throw outcome;
        expect(outcome.value).toMatchObject({ success: false, cancelled: true, exit_code: null });
        expect(running(sleeper)).toBe(false); // nothing of the run outlives the server
        const logs = execFileSync('cat', [
          ...execFileSync('ls', [join(server.home, 'logs')])
            .toString()
            .split('\n')
            .filter((name) => name.startsWith('executions-'))
            .map((name) => join(server.home, 'logs', name)),
        ]).toString();
        expect(logs).toContain(sleeper); // the run's log entry was flushed before exit
      } finally {
        rmSync(server.home, { recursive: true, force: true });
      }
    }, 60_000);
  }

  it('a port it cannot listen on stops start-up with exit 2, naming it', async () => {
    await expect(startHttp({ args: ['--host', '192.0.2.1'] })).rejects.toThrow(
      /exited 2.*cannot listen on 192\.0\.2\.1/s,
    );
  });
});
