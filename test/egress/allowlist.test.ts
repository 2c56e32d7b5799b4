// CODEXEC_NETWORK=allowlist end to end: the real server, real sandboxes (the suite's mode), the
// egress proxy, and origins on the host's loopback that count who reached them.
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { createServer as createHttp, type Server } from 'node:http';
import { createServer as createHttps } from 'node:https';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { allowing, ownedDir } from '../helpers/host-dir.js';
import { IS_ROOT, SANDBOX_MODE } from '../helpers/mode.js';
import { selfSignedCert } from '../helpers/origin.js';
import { baseEnv, CLI, callTool, startServer, type TestServer, tempDir } from '../helpers/server.js';
import { ensureImage, RUNTIMES } from '../sandbox/container/engine.js';

interface Origin {
  readonly port: number;
  /** Connections it accepted. */
  accepted: number;
  readonly server: Server;
}

/** An origin on 127.0.0.1 (and 127.0.0.2): /hello, /big (1 MB), /redirect?to=URL. */
async function origin(tls?: { key: string; cert: string }, host = '127.0.0.1'): Promise<Origin> {
  const handler: Parameters<typeof createHttp>[1] = (request, response) => {
    const url = new URL(request.url ?? '/', 'http://origin');
    if (url.pathname === '/redirect') {
      response.writeHead(302, { location: url.searchParams.get('to') ?? '/' }).end();
    } else if (url.pathname === '/big') {
      response.writeHead(200, { 'content-type': 'application/octet-stream' }).end(Buffer.alloc(1 << 20, 7));
    } else {
      response.end(
        `hello from ${(request.socket.address() as AddressInfo).port} host=${request.headers.host}`,
      );
    }
  };
  const server = tls ? createHttps(tls, handler) : createHttp(handler);
  const state = { accepted: 0, server, port: 0 };
  server.on(tls ? 'secureConnection' : 'connection', () => {
    state.accepted++;
  });
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  state.port = (server.address() as AddressInfo).port;
  return state;
}

// Python in the sandbox: fetch through the proxy the variables name. A client honours no_proxy
// (the sandbox's own loopback: localhost, 127.0.0.1), and these origins live on the host's
// loopback under those names, so `via_proxy` drops it: a name is then the proxy's to resolve.
const FETCH = `
import json, os, ssl, sys, urllib.request, urllib.error
def fetch(url, ca=None, via_proxy=True):
    if via_proxy:
        for name in ("no_proxy", "NO_PROXY"):
            os.environ.pop(name, None)
    handlers = [urllib.request.HTTPSHandler(context=ssl.create_default_context(cadata=ca))] if ca else []
    opener = urllib.request.build_opener(*handlers)
    try:
        with opener.open(url, timeout=20) as response:
            body = response.read()
            return [response.status, body.decode() if len(body) < 1000 else len(body)]
    except urllib.error.HTTPError as error:
        return [error.code, error.read().decode()]
    except Exception as error:
        return ["error", type(error).__name__ + ": " + str(error)]
`;

interface Run {
  success: boolean;
  stdout: string;
  stderr: string;
  warm: boolean;
  execution_id: string;
  network_denied?: Array<{ host: string; port: number }>;
}

/**
 * The suite's mode (namespace or landlock), then docker mode under each runtime where the
 * container suites run: as root (an ordinary user's pass, scripts/test-unprivileged.sh, covers the
 * modes an ordinary user's server is for).
 */
const MODES = [
  { name: SANDBOX_MODE, env: {} as Record<string, string>, missing: undefined as string | undefined },
  ...(IS_ROOT ? RUNTIMES.map((runtime) => ({ ...runtime, name: `docker (${runtime.name})` })) : []),
];

describe.each(MODES)(
  'network allowlist in $name mode: code reaches the listed hosts through the proxy, and nothing else',
  ({ name, env: mode, missing }) => {
    if (missing) console.warn(`allowlist tests in ${name} mode skipped: ${missing}`);
    describe.skipIf(missing)(`${name} mode`, () => {
      let server: TestServer;
      let listed: Origin;
      let unlisted: Origin;
      let denied: Origin;
      let secure: Origin;
      let second: Origin;
      let cert: string;
      const dir = tempDir('codexec-egress-');
      // A host directory code may work in: a run there is cold (no warm process serves it).
      const coldDir = ownedDir('codexec-egress-cold-');

      beforeAll(async () => {
        // A docker-mode server needs its image (built from the host when missing: minutes, once).
        if (mode.CODEXEC_SANDBOX_MODE === 'docker') ensureImage();
        const made = selfSignedCert(dir);
        cert = made.cert;
        const { key } = made;
        [listed, unlisted, denied, secure, second] = await Promise.all([
          origin(),
          origin(),
          origin(),
          origin({ key, cert }),
          origin(undefined, '127.0.0.2'),
        ]);
        server = await startServer({
          env: {
            ...mode,
            ...allowing(coldDir),
            CODEXEC_NETWORK: 'allowlist',
            CODEXEC_ALLOWED_DOMAINS: [
              `localhost:${listed.port}`,
              `localhost:${secure.port}`,
              `localhost:${denied.port}`,
              `127.0.0.2:${second.port}`,
            ].join(','),
            CODEXEC_DENIED_DOMAINS: `localhost:${denied.port}`,
            ...allowing(coldDir),
          },
        });
      }, 600_000);
      afterAll(async () => {
        await server?.close();
        for (const each of [listed, unlisted, denied, secure, second]) each?.server.close();
      });

      const python = async (code: string, extra: Record<string, unknown> = {}) =>
        (
          await callTool<Run>(server.client, 'execute_code', {
            language: 'python',
            code: FETCH + code,
            ...extra,
          })
        ).value;
      const fetched = (run: Run) => JSON.parse(run.stdout.trim().split('\n').at(-1) ?? 'null');

      it('a listed host: reachable over HTTP (warm and cold runs) and HTTPS, body intact', async () => {
        const warm = await python(`print(json.dumps(fetch("http://localhost:${listed.port}/hello")))`);
        expect(fetched(warm)).toEqual([200, `hello from ${listed.port} host=localhost:${listed.port}`]);
        expect(warm.network_denied).toBeUndefined();
        // A working_dir makes the run cold: its sandbox starts with the forwarder on the request path.
        const cold = await python(`print(json.dumps(fetch("http://localhost:${listed.port}/big")))`, {
          working_dir: coldDir,
        });
        expect([cold.warm, fetched(cold)]).toEqual([false, [200, 1 << 20]]);
        const tls = await python(
          `print(json.dumps(fetch("https://localhost:${secure.port}/hello", ca=${JSON.stringify(cert)})))`,
        );
        expect(fetched(tls)).toEqual([200, `hello from ${secure.port} host=localhost:${secure.port}`]);
        expect(secure.accepted).toBe(1);
      });

      it('the proxy variables work as set (no_proxy kept): a listed IP literal off the sandbox loopback', async () => {
        const run = await python(
          `import urllib.request\nprint(json.dumps(fetch("http://127.0.0.2:${second.port}/hello", via_proxy=False)))`,
        );
        expect(fetched(run)).toEqual([200, `hello from ${second.port} host=127.0.0.2:${second.port}`]);
      });

      it('a loopback name the list names goes to the proxy as the variables are set: no_proxy leaves it out', async () => {
        const run = await python(
          `print(os.environ["NO_PROXY"])\nprint(json.dumps(fetch("http://localhost:${listed.port}/hello", via_proxy=False)))`,
        );
        expect(run.stdout.split('\n')[0]).toBe('127.0.0.1,::1'); // localhost is listed; the rest stay the run's own
        expect(fetched(run)).toEqual([200, `hello from ${listed.port} host=localhost:${listed.port}`]);
      });

      it('an unlisted host: 403 from the proxy, named in network_denied, never contacted', async () => {
        const run = await python(`print(json.dumps(fetch("http://localhost:${unlisted.port}/hello")))`);
        const [status, body] = fetched(run);
        expect(status).toBe(403);
        expect(body).toContain(`localhost:${unlisted.port}`);
        expect(run.network_denied).toEqual([{ host: 'localhost', port: unlisted.port }]);
        const tls = await python(
          `print(json.dumps(fetch("https://localhost:${unlisted.port}/", ca=${JSON.stringify(cert)})))`,
        );
        expect(fetched(tls)[0]).toBe('error'); // the CONNECT's 403 ends the tunnel before TLS
        expect(tls.network_denied).toEqual([{ host: 'localhost', port: unlisted.port }]);
        expect(unlisted.accepted).toBe(0);
      });

      it('the denied list wins over the allowed one', async () => {
        const run = await python(`print(json.dumps(fetch("http://localhost:${denied.port}/hello")))`);
        expect(fetched(run)[0]).toBe(403);
        expect(run.network_denied).toEqual([{ host: 'localhost', port: denied.port }]);
        expect(denied.accepted).toBe(0);
      });

      it('an IP literal is not its name: 127.0.0.1 refused where only localhost is listed', async () => {
        const before = listed.accepted;
        const run = await python(`print(json.dumps(fetch("http://127.0.0.1:${listed.port}/hello")))`);
        expect(fetched(run)[0]).toBe(403);
        expect(run.network_denied).toEqual([{ host: '127.0.0.1', port: listed.port }]);
        expect(listed.accepted).toBe(before);
      });

      it('a redirect from a listed host to an unlisted one is refused at the second connection', async () => {
        const target = `http://localhost:${unlisted.port}/hello`;
        const run = await python(
          `print(json.dumps(fetch("http://localhost:${listed.port}/redirect?to=${encodeURIComponent(target)}")))`,
        );
        expect(fetched(run)[0]).toBe(403);
        expect(run.network_denied).toEqual([{ host: 'localhost', port: unlisted.port }]);
        expect(unlisted.accepted).toBe(0);
      });

      it('allowed_domains narrows the list for one call, and cannot widen it', async () => {
        const narrowed = await python(`print(json.dumps(fetch("http://localhost:${listed.port}/hello")))`, {
          allowed_domains: [`localhost:${secure.port}`],
        });
        expect(fetched(narrowed)[0]).toBe(403);
        expect(narrowed.network_denied).toEqual([{ host: 'localhost', port: listed.port }]);
        const widened = await python(`print(json.dumps(fetch("http://localhost:${unlisted.port}/hello")))`, {
          allowed_domains: [`localhost:${unlisted.port}`],
        });
        expect(fetched(widened)[0]).toBe(403);
        expect(unlisted.accepted).toBe(0);
        const bad = await callTool(server.client, 'execute_code', {
          language: 'python',
          code: 'print(1)',
          allowed_domains: ['*.com'],
        });
        expect(bad.isError).toBe(true);
        expect(bad.text).toContain('allowed_domains');
      });

      it('no route around the proxy: direct TCP, UDP, DNS and a public address all fail', async () => {
        const before = listed.accepted;
        const run = await python(`
import socket
def attempt(step):
    try:
        step()
        return "ok"
    except Exception as error:
        return type(error).__name__
def tcp(host, port):
    s = socket.create_connection((host, port), timeout=5)
    s.close()
def udp():
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.sendto(b"x", ("203.0.113.80", 53))
def raw():
    socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)
print(json.dumps({
    "direct": attempt(lambda: tcp("127.0.0.1", ${listed.port})),
    "public": attempt(lambda: tcp("203.0.113.80", 443)),
    "udp": attempt(udp),
    "raw": attempt(raw),
    "dns": attempt(lambda: socket.getaddrinfo("example.com", 443)),
}))
`);
        const outcome = fetched(run);
        for (const [what, result] of Object.entries(outcome)) expect(result, what).not.toBe('ok');
        expect(listed.accepted).toBe(before);
      });

      it('execute_command and a session reach the list too; each send reports its own refusals', async () => {
        const command = await callTool<Run>(server.client, 'execute_command', {
          command: `curl -s --noproxy '' --max-time 20 http://localhost:${listed.port}/hello; echo; curl -s -o /dev/null -w '%{http_code}' --noproxy '' http://localhost:${unlisted.port}/`,
        });
        expect(command.value.stdout).toBe(`hello from ${listed.port} host=localhost:${listed.port}\n403`);
        expect(command.value.network_denied).toEqual([{ host: 'localhost', port: unlisted.port }]);

        const started = await callTool<{ session_id: string }>(server.client, 'start_session', {
          language: 'python',
        });
        const session_id = started.value.session_id;
        try {
          const send = async (code: string) =>
            (await callTool<Run>(server.client, 'send_to_session', { session_id, code })).value;
          await send(FETCH);
          const first = await send(`print(json.dumps(fetch("http://localhost:${unlisted.port}/hello")))`);
          expect(fetched(first)[0]).toBe(403);
          expect(first.network_denied).toEqual([{ host: 'localhost', port: unlisted.port }]);
          const next = await send(`print(json.dumps(fetch("http://localhost:${listed.port}/hello")))`);
          expect(fetched(next)[0]).toBe(200);
          expect(next.network_denied).toBeUndefined();
        } finally {
          await callTool(server.client, 'close_session', { session_id });
        }
        expect(unlisted.accepted).toBe(0);
      });

      it('the execution log and the audit entry hold every connection, allowed and refused, with the reason', async () => {
        const run = await python(
          `print(json.dumps(fetch("http://localhost:${listed.port}/hello")))\nprint(json.dumps(fetch("http://localhost:${unlisted.port}/")))`,
        );
        const { value: entry } = await callTool<{ network?: unknown[] }>(server.client, 'get_execution_log', {
          execution_id: run.execution_id,
        });
        expect(entry.network).toEqual([
          expect.objectContaining({ host: 'localhost', port: listed.port, allowed: true, method: 'GET' }),
          expect.objectContaining({
            host: 'localhost',
            port: unlisted.port,
            allowed: false,
            reason: expect.stringContaining('not on the allowed list'),
          }),
        ]);
        const logs = join(server.home, 'logs');
        const audited = readdirSync(logs)
          .filter((name) => name.startsWith('audit-'))
          .flatMap((name) => readFileSync(join(logs, name), 'utf8').trimEnd().split('\n'))
          .map((line) => JSON.parse(line) as { execution_id: string; network?: unknown })
          .find((line) => line.execution_id === run.execution_id);
        expect(audited?.network).toEqual(entry.network);
        const verify = spawnSync(process.execPath, [CLI, 'audit', 'verify'], {
          env: baseEnv(server.home),
          encoding: 'utf8',
        });
        expect(verify.status, verify.stdout + verify.stderr).toBe(0);
      });
    });
  },
);

describe('network allowlist: settings and calls that cannot be honoured are refused', () => {
  it('allowed_domains on a server whose network is none', async () => {
    const server = await startServer();
    try {
      const { isError, text } = await callTool(server.client, 'execute_code', {
        language: 'python',
        code: 'print(1)',
        allowed_domains: ['example.com'],
      });
      expect(isError).toBe(true);
      expect(text).toContain('allowed_domains needs CODEXEC_NETWORK=allowlist');
    } finally {
      await server.close();
    }
  });
});

describe('network allowlist under CODEXEC_APPROVAL=ask: a host off the list asks the client', () => {
  let server: TestServer;
  let modern: TestServer;
  let listed: Origin;
  let unlisted: Origin;
  let denied: Origin;
  /** The host questions the client saw, and what the next ones answer. */
  const asked: string[] = [];
  let answer = 'approve';
  const elicit = ({ message }: { message: string }) => {
    if (!message.includes('asks to connect'))
      return { action: 'accept' as const, content: { decision: 'approve' } };
    asked.push(message);
    return { action: 'accept' as const, content: { decision: answer } };
  };

  beforeAll(async () => {
    [listed, unlisted, denied] = await Promise.all([origin(), origin(), origin()]);
    const env = {
      CODEXEC_APPROVAL: 'ask',
      CODEXEC_NETWORK: 'allowlist',
      CODEXEC_ALLOWED_DOMAINS: `localhost:${listed.port}`,
      CODEXEC_DENIED_DOMAINS: `localhost:${denied.port}`,
    };
    [server, modern] = await Promise.all([
      startServer({ env, elicit }),
      startServer({ env, elicit, era: 'modern' }),
    ]);
  });
  afterAll(async () => {
    await Promise.all([server?.close(), modern?.close()]);
    for (const each of [listed, unlisted, denied]) each?.server.close();
  });

  // An approved name reaches public addresses only (no DNS answer can point it inward): the
  // loopback origin off the list is asked for by its address.
  const fetchOn = async (on: TestServer, port: number, host = '127.0.0.1') => {
    const { value } = await callTool<Run>(on.client, 'execute_code', {
      language: 'python',
      code: `${FETCH}print(json.dumps(fetch("http://${host}:${port}/hello")))`,
    });
    return { run: value, status: JSON.parse(value.stdout.trim().split('\n').at(-1) ?? 'null')?.[0] };
  };

  it('approve lets that run through; deny refuses; trust stops the asking on the connection', async () => {
    answer = 'approve';
    const approved = await fetchOn(server, unlisted.port);
    expect([approved.status, approved.run.network_denied]).toEqual([200, undefined]);
    expect(asked).toHaveLength(1);
    expect(asked[0]).toContain(`127.0.0.1:${unlisted.port}`);
    expect(unlisted.accepted).toBe(1);
    // Approval was for that run: the next one asks again.
    answer = 'deny';
    const refused = await fetchOn(server, unlisted.port);
    expect([refused.status, refused.run.network_denied]).toEqual([
      403,
      [{ host: '127.0.0.1', port: unlisted.port }],
    ]);
    expect([asked.length, unlisted.accepted]).toEqual([2, 1]);
    answer = 'approve_trust_session';
    expect((await fetchOn(server, unlisted.port)).status).toBe(200);
    expect((await fetchOn(server, unlisted.port)).status).toBe(200);
    expect(asked).toHaveLength(3);
    const { value: entry } = await callTool<{ network?: Array<Record<string, unknown>> }>(
      server.client,
      'get_execution_log',
      { execution_id: approved.run.execution_id },
    );
    expect(entry.network).toEqual([expect.objectContaining({ allowed: true, asked: true })]);
  });

  it('never asks for the denied list, nor for a listed host', async () => {
    const before = asked.length;
    expect((await fetchOn(server, denied.port, 'localhost')).status).toBe(403);
    expect((await fetchOn(server, listed.port, 'localhost')).status).toBe(200);
    expect(asked.length).toBe(before);
    expect(denied.accepted).toBe(0);
  });

  it('a 2026-era call outside a task cannot be paused mid-run to ask: the host is refused', async () => {
    const before = asked.length;
    const { status, run } = await fetchOn(modern, unlisted.port);
    expect(status).toBe(403);
    expect(run.network_denied).toEqual([{ host: '127.0.0.1', port: unlisted.port }]);
    expect(asked.length).toBe(before);
  });
});
