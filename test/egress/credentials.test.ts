// Credentials by placeholder (CODEXEC_CREDENTIALS), end to end: the real server in the suite's
// mode and in docker mode, code calling an HTTPS origin on the host's loopback that stands in
// for an API. The origin must receive the value; the code, its results, the logs, the audit and
// the sandbox's files and environment must hold only the placeholder.
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { createServer as createHttp, type Server } from 'node:http';
import { createServer as createHttps } from 'node:https';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { IS_ROOT, SANDBOX_MODE } from '../helpers/mode.js';
import { selfSignedCert } from '../helpers/origin.js';
import {
  baseEnv,
  CLI,
  callTool,
  serverCwd,
  startServer,
  type TestServer,
  tempDir,
} from '../helpers/server.js';
import { ensureImage, RUNTIMES } from '../sandbox/container/engine.js';

const VALUE = 'sk-live-0123456789abcdefREAL';

interface Origin {
  readonly port: number;
  readonly server: Server;
  /** The Authorization (and X-Other) headers of each request it got. */
  readonly seen: string[];
}

/** Answers with what it was sent: the request's Authorization header, echoed (as an API's error might). */
async function origin(tls?: { key: string; cert: string }): Promise<Origin> {
  const seen: string[] = [];
  const handler: Parameters<typeof createHttp>[1] = (request, response) => {
    seen.push(`${request.headers.authorization ?? ''}|${request.headers['x-other'] ?? ''}`);
    const auth = request.headers.authorization ?? '';
    const echo = `auth=${auth} encoding=${request.headers['accept-encoding'] ?? ''}`;
    if (request.url === '/careless') {
      // An origin that compresses unasked, and echoes the header in its reason phrase and a header's name.
      const name = `x-${auth.replace(/[^A-Za-z0-9-]/g, '-')}`;
      response.writeHead(200, auth, { 'content-encoding': 'gzip', [name]: '1' }).end(gzipSync(echo));
      return;
    }
    response.writeHead(200, { 'x-echo': auth }).end(echo);
  };
  const server = tls ? createHttps(tls, handler) : createHttp(handler);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { port: (server.address() as AddressInfo).port, server, seen };
}

interface Run {
  success: boolean;
  stdout: string;
  stderr: string;
  execution_id: string;
  network_denied?: Array<{ host: string; port: number }>;
}

/** Every file under `dir` whose bytes hold `text`. */
function filesHolding(dir: string, text: string): string[] {
  const found: string[] = [];
  const walk = (path: string) => {
    const stat = statSync(path, { throwIfNoEntry: false });
    if (stat?.isDirectory()) for (const name of readdirSync(path)) walk(join(path, name));
    else if (stat?.isFile() && readFileSync(path).includes(text)) found.push(path);
  };
  walk(dir);
  return found;
}

const MODES = [
  { name: SANDBOX_MODE, env: {} as Record<string, string>, missing: undefined as string | undefined },
  ...(IS_ROOT ? RUNTIMES.map((runtime) => ({ ...runtime, name: `docker (${runtime.name})` })) : []),
];

describe.each(MODES)('credentials by placeholder in $name mode', ({ name, env: mode, missing }) => {
  if (missing) console.warn(`credential tests in ${name} mode skipped: ${missing}`);
  describe.skipIf(missing)(`${name} mode`, () => {
    let server: TestServer;
    let api: Origin;
    let plain: Origin;
    let other: Origin;
    let placeholder: string;
    const dir = tempDir('codexec-credentials-');

    beforeAll(async () => {
      if (mode.CODEXEC_SANDBOX_MODE === 'docker') ensureImage();
      const tls = selfSignedCert(dir);
      [api, plain, other] = await Promise.all([origin(tls), origin(), origin(tls)]);
      writeFileSync(join(dir, 'value'), `${VALUE}\n`, { mode: 0o600 });
      writeFileSync(
        join(dir, 'credentials.json'),
        JSON.stringify({
          API_KEY: {
            file: join(dir, 'value'),
            hosts: [`localhost:${api.port}`],
            header: 'Authorization: Bearer {value}',
          },
        }),
      );
      server = await startServer({
        env: {
          ...mode,
          CODEXEC_NETWORK: 'allowlist',
          CODEXEC_ALLOWED_DOMAINS: [api, plain, other].map((each) => `localhost:${each.port}`).join(','),
          CODEXEC_CREDENTIALS: join(dir, 'credentials.json'),
          // The server's own trust: the stand-in API's certificate (the sandbox never gets this one).
          NODE_EXTRA_CA_CERTS: join(dir, 'cert.pem'),
        },
      });
      const env = await bash('printf %s "$API_KEY"');
      placeholder = env.stdout;
    }, 600_000);

    afterAll(async () => {
      await server?.close();
      for (const each of [api, plain, other]) each?.server.close();
    });

    const bash = async (code: string) =>
      (await callTool<Run>(server.client, 'execute_code', { language: 'bash', code })).value;

    it('gives code a placeholder, never the value', async () => {
      expect(placeholder).toMatch(/^codexec-placeholder-[0-9a-f]{32}$/);
      const env = await bash('env; cat /proc/self/environ | tr "\\0" "\\n"');
      expect(env.stdout).toContain(`API_KEY=${placeholder}`);
      expect(env.stdout).not.toContain(VALUE);
    });

    it('puts the value in on the way to its host, and masks it out of the answer (curl and Python)', async () => {
      const before = api.seen.length;
      const curl = await bash(
        `curl -sS --noproxy '' -D - https://localhost:${api.port}/v1 -H "Authorization: Bearer $API_KEY"`,
      );
      expect(curl.stderr).toBe('');
      expect(curl.stdout).toContain(`auth=Bearer ${placeholder} encoding=identity`);
      expect(curl.stdout).toMatch(new RegExp(`x-echo: Bearer ${placeholder}`, 'i'));
      const python = (
        await callTool<Run>(server.client, 'execute_code', {
          language: 'python',
          code: [
            'import os, urllib.request',
            'for name in ("no_proxy", "NO_PROXY"): os.environ.pop(name, None)',
            `request = urllib.request.Request("https://localhost:${api.port}/v2", headers={"Authorization": "Bearer " + os.environ["API_KEY"]})`,
            'print(urllib.request.urlopen(request, timeout=20).read().decode())',
          ].join('\n'),
        })
      ).value;
      expect(python.stdout).toBe(`auth=Bearer ${placeholder} encoding=identity\n`);
      expect(api.seen.slice(before)).toEqual([`Bearer ${VALUE}|`, `Bearer ${VALUE}|`]);
    });

    it('masks it in an answer compressed unasked, its reason phrase and its header names', async () => {
      const curl = await bash(
        `curl -sS --noproxy '' -D - https://localhost:${api.port}/careless -H "Authorization: Bearer $API_KEY"`,
      );
      expect(curl.stdout).toContain(`auth=Bearer ${placeholder} encoding=identity`);
      expect(curl.stdout).toContain(`HTTP/1.1 200 Bearer ${placeholder}`);
      expect(curl.stdout).toContain(`x-Bearer-${placeholder}: 1`);
      expect(curl.stdout).not.toMatch(/content-encoding/i);
      expect(curl.stdout).not.toContain(VALUE);
    });

    it('works the same in a session', async () => {
      const session = await callTool<{ session_id: string }>(server.client, 'start_session', {
        language: 'bash',
      });
      try {
        const sent = await callTool<Run>(server.client, 'send_to_session', {
          session_id: session.value.session_id,
          code: `curl -sS --noproxy '' https://localhost:${api.port}/s -H "Authorization: Bearer $API_KEY"`,
        });
        expect(sent.value.stdout).toBe(`auth=Bearer ${placeholder} encoding=identity`);
        expect(api.seen.at(-1)).toBe(`Bearer ${VALUE}|`);
      } finally {
        await callTool(server.client, 'close_session', { session_id: session.value.session_id });
      }
    });

    it('refuses the placeholder to another host, in another header, and in plain HTTP, and records each', async () => {
      const before = { api: api.seen.length, plain: plain.seen.length };
      const elsewhere = await bash(
        `curl -sS --noproxy '' http://localhost:${plain.port}/ -H "Authorization: Bearer $API_KEY"`,
      );
      expect(elsewhere.stdout).toContain(`localhost:${plain.port} refused: API_KEY's placeholder`);
      expect(elsewhere.network_denied).toEqual([{ host: 'localhost', port: plain.port }]);
      const otherHeader = await bash(
        `curl -sS --noproxy '' https://localhost:${api.port}/ -H "X-Other: $API_KEY"`,
      );
      expect(otherHeader.stdout).toContain(
        'may only be sent in its authorization header, not in header X-Other',
      );
      expect(otherHeader.network_denied).toEqual([{ host: 'localhost', port: api.port }]);
      expect({ api: api.seen.length, plain: plain.seen.length }).toEqual(before);
      // The audit's entry of each run names the refusal.
      const audit = readdirSync(join(server.home, 'logs'))
        .filter((file) => file.startsWith('audit-'))
        .map((file) => readFileSync(join(server.home, 'logs', file), 'utf8'))
        .join('');
      const entry = audit
        .split('\n')
        .filter(Boolean)
        .map((line) => JSON.parse(line) as { execution_id?: string; network?: Array<{ reason?: string }> })
        .find((it) => it.execution_id === elsewhere.execution_id);
      expect(entry?.network?.some((it) => it.reason?.includes("API_KEY's placeholder"))).toBe(true);
    });

    it('leaves every other HTTPS connection a blind tunnel', async () => {
      // The other origin's own certificate reaches the code: with only the sandbox's trust stores,
      // curl refuses it (it is not the proxy's); with it named, the request goes through untouched.
      const blind = await bash(
        `curl -sS --noproxy '' https://localhost:${other.port}/ -o /dev/null -w '%{http_code}'`,
      );
      expect(blind.stderr, JSON.stringify(blind)).toMatch(/self.signed|certificate/i);
      const cert = readFileSync(join(dir, 'cert.pem'), 'utf8');
      const named = await bash(
        `cat > origin.pem <<'EOF'\n${cert}EOF\ncurl -sS --noproxy '' --cacert origin.pem https://localhost:${other.port}/`,
      );
      // The whole result on failure (CI once saw an empty stdout here, and nothing to say why).
      expect(named.stdout, JSON.stringify(named)).toBe('auth= encoding=');
    });

    it('has the value nowhere: results, logs, audit, workspaces, the server’s stderr', async () => {
      expect(filesHolding(server.home, VALUE)).toEqual([]);
      expect(server.stderr()).not.toContain(VALUE);
    });
  });
});

describe('CODEXEC_CREDENTIALS files that stop the start', () => {
  function start(entries: unknown, env: Record<string, string> = {}) {
    const home = tempDir();
    const dir = tempDir('codexec-credentials-');
    writeFileSync(join(dir, 'value'), 'hunter2-in-a-file\n');
    writeFileSync(join(dir, 'empty'), '\n');
    writeFileSync(join(dir, 'two-lines'), 'a\nb\n');
    const file = join(dir, 'credentials.json');
    writeFileSync(file, JSON.stringify(entries).replaceAll('DIR', dir));
    const result = spawnSync(process.execPath, [CLI, 'serve'], {
      env: {
        ...baseEnv(home),
        CODEXEC_NETWORK: 'allowlist',
        CODEXEC_ALLOWED_DOMAINS: 'api.example.com',
        CODEXEC_CREDENTIALS: file,
        ...env,
      },
      cwd: serverCwd(home),
      input: '',
      encoding: 'utf8',
      timeout: 30_000,
    });
    return { status: result.status, stderr: result.stderr };
  }
  const good = { file: 'DIR/value', hosts: ['api.example.com'], header: 'Authorization: Bearer {value}' };

  it.each([
    [
      'a network other than the allowlist',
      { KEY: good },
      { CODEXEC_NETWORK: 'none' },
      /needs CODEXEC_NETWORK=allowlist/,
    ],
    [
      'a host the allowlist does not name',
      { KEY: { ...good, hosts: ['other.example.com'] } },
      {},
      /KEY\.hosts: other\.example\.com is not in CODEXEC_ALLOWED_DOMAINS/,
    ],
    [
      'a value file it cannot read',
      { KEY: { ...good, file: 'DIR/missing' } },
      {},
      /KEY: cannot read .*missing \(ENOENT\)/,
    ],
    ['an empty value', { KEY: { ...good, file: 'DIR/empty' } }, {}, /KEY: .*empty is empty/],
    [
      'a value of two lines',
      { KEY: { ...good, file: 'DIR/two-lines' } },
      {},
      /KEY: .*holds a control character/,
    ],
    [
      'a header without {value}',
      { KEY: { ...good, header: 'Authorization: Bearer' } },
      {},
      /KEY\.header: .* one \{value\}/,
    ],
    [
      'a header the proxy owns',
      { KEY: { ...good, header: 'Host: {value}' } },
      {},
      /KEY\.header: Host is the proxy's/,
    ],
    [
      'a name that is no variable',
      { 'MY-KEY': good },
      {},
      /"MY-KEY": a credential is named as the environment variable/,
    ],
    ['the value inline', { KEY: { ...good, value: 'hunter2-inline' } }, {}, /unknown field value/],
  ])('refuses %s', (_what, entries, env, message) => {
    const { status, stderr } = start(entries, env);
    expect(status).toBe(2);
    expect(stderr).toMatch(message);
    expect(stderr).not.toContain('hunter2');
  });
});
