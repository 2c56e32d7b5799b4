// The egress proxy's own cost, in two parts, each alternated A/B in one run:
//  1. proxy alone: a 1 MB download from an origin on 127.0.0.1 by a client in this process,
//     directly and through lanes from openLane (Unix socket and TCP, CONNECT and absolute-form
//     GET), and through the sandbox's Python forwarder relaying to a Unix lane (run here on the
//     host, in a pid namespace of its own so it ends with the bench); then MB/s for 32 MB.
//  2. end to end over MCP stdio: a Python run downloading 1 MB (and 16 MB) from the host's origin
//     with network allowlist against host (the floor) and none doing no fetch (the run's own
//     cost); then print(1) with network none against allowlist, warm and cold (working_dir).
// Prints p50 / p90 per variant and the ratio of p50s to the row's baseline.
//
// --base-forwarder FILE adds that forwarder's rows to part 1 (an A/B of a change to the relay:
// `git show HEAD~1:drivers/egress_forward.py > /tmp/base.py`).
//
//   npm run build && node bench/egress.mjs [--n 30] [--proxy-n 100] [--mode namespace|landlock]
//     [--base-forwarder FILE]
import { execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { EgressRules, openLane, parseRules } from '../dist/egress/index.js';
import { interleave, ms, startServer } from './lib.mjs';

const { values } = parseArgs({
  options: {
    n: { type: 'string', default: process.env.BENCH_N ?? '30' },
    'proxy-n': { type: 'string', default: process.env.BENCH_PROXY_N ?? '100' },
    mode: { type: 'string' },
    'base-forwarder': { type: 'string' },
  },
});
const N = Number(values.n);
const PROXY_N = Number(values['proxy-n']);
const PACE_MS = 100;
const MB = 1 << 20;
const FORWARDER = resolve(import.meta.dirname, '../drivers/egress_forward.py');

const bodies = { '/1': randomBytes(MB), '/16': randomBytes(16 * MB), '/32': randomBytes(32 * MB) };
const origin = http.createServer((req, res) => {
  const body = bodies[req.url];
  if (!body) return res.writeHead(404).end();
  res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': body.length }).end(body);
});
await new Promise((done) => origin.listen(0, '127.0.0.1', done));
const TARGET = `127.0.0.1:${origin.address().port}`;

function table(title, stats, base, size) {
  console.log(`\n${title}`);
  for (const [name, s] of Object.entries(stats)) {
    const rate = size ? `  ${((size / MB / s.p50) * 1000).toFixed(0).padStart(5)} MB/s` : '';
    const ratio =
      name === base ? '' : `  ×${(s.p50 / stats[base].p50).toFixed(2)}  +${ms(s.p50 - stats[base].p50)} ms`;
    console.log(
      `  ${name.padEnd(26)} p50 ${ms(s.p50).padStart(8)}  p90 ${ms(s.p90).padStart(8)} ms${rate}${ratio}`,
    );
  }
}

// ---- 1. the proxy alone -------------------------------------------------------------------

/** GET `options`, resolving with the body's length once it has all come (checked). */
function get(options, size) {
  return new Promise((done, fail) => {
    const req = http.get(options, (res) => {
      let bytes = 0;
      res.on('data', (chunk) => {
        bytes += chunk.length;
      });
      res.on('error', fail);
      res.on('end', () =>
        res.statusCode === 200 && bytes === size
          ? done()
          : fail(new Error(`${res.statusCode}, ${bytes} bytes`)),
      );
    });
    req.on('error', fail);
  });
}

const direct = (path) =>
  get({ agent: false, host: '127.0.0.1', port: origin.address().port, path }, bodies[path].length);
const absolute = (to, path) =>
  get(
    { agent: false, ...to, path: `http://${TARGET}${path}`, headers: { host: TARGET } },
    bodies[path].length,
  );
function tunnelled(to, path) {
  return new Promise((done, fail) => {
    const req = http.request({
      agent: false,
      ...to,
      method: 'CONNECT',
      path: TARGET,
      headers: { host: TARGET },
    });
    req.on('error', fail);
    req.on('connect', (res, socket, head) => {
      if (res.statusCode !== 200) return fail(new Error(`CONNECT ${res.statusCode}`));
      if (head.length > 0) socket.unshift(head);
      get({ createConnection: () => socket, path, headers: { host: TARGET } }, bodies[path].length).then(
        done,
        fail,
      );
    });
    req.end();
  });
}

/** The sandbox's forwarder on a free host port, relaying to `socket`; killed with its namespace. */
async function startForwarder(socket, file = FORWARDER) {
  const python = execFileSync('python3', ['-c', 'import sys; print(sys.executable)'], {
    encoding: 'utf8',
  }).trim();
  const probe = http.createServer();
  await new Promise((done) => probe.listen(0, '127.0.0.1', done));
  const port = probe.address().port;
  await new Promise((done) => probe.close(done));
  const argv = [
    '--pid',
    '--fork',
    '--kill-child',
    python,
    '-I',
    '-S',
    file,
    socket,
    String(port),
    '/bin/sleep',
    'infinity',
  ];
  const child = spawn('unshare', argv, { stdio: 'ignore' });
  // unshare ignores SIGTERM while it waits; its death kills its child (pid 1 here), so the relay.
  const exited = new Promise((done) => child.once('exit', done));
  const stop = () => child.kill('SIGKILL') && exited;
  for (let tries = 0; ; tries++) {
    const up = await new Promise((done) => {
      const probeSocket = connect(port, '127.0.0.1', () => {
        probeSocket.destroy();
        done(true);
      });
      probeSocket.on('error', () => done(false));
    });
    if (up) break;
    if (tries > 100) {
      await stop();
      throw new Error('the forwarder did not start');
    }
    await new Promise((done) => setTimeout(done, 20));
  }
  return { to: { host: '127.0.0.1', port }, stop };
}

const root = mkdtempSync(join(tmpdir(), 'codexec-bench-egress-'));
const user = { rules: new EgressRules(parseRules(TARGET, 'bench')), record() {} };
const unix = await openLane({ socket: join(root, 'lane.sock') }, user);
const tcp = await openLane({ tcp: true }, user);
let forwarder;
let base;
try {
  forwarder = await startForwarder(unix.socket);
  if (values['base-forwarder']) base = await startForwarder(unix.socket, resolve(values['base-forwarder']));
  const toUnix = { socketPath: unix.socket };
  const toTcp = { host: '127.0.0.1', port: tcp.port };
  const variants = (path) => ({
    direct: () => direct(path),
    'unix lane, CONNECT': () => tunnelled(toUnix, path),
    'unix lane, GET': () => absolute(toUnix, path),
    'tcp lane, CONNECT': () => tunnelled(toTcp, path),
    'tcp lane, GET': () => absolute(toTcp, path),
    'forwarder→unix, CONNECT': () => tunnelled(forwarder.to, path),
    'forwarder→unix, GET': () => absolute(forwarder.to, path),
    ...(base && {
      'base forwarder, CONNECT': () => tunnelled(base.to, path),
      'base forwarder, GET': () => absolute(base.to, path),
    }),
  });
  console.log(`proxy alone (client in this process, origin on ${TARGET})`);
  table(
    `1 MB download, n=${PROXY_N} each, alternated`,
    await interleave(variants('/1'), { n: PROXY_N, warmup: 10 }),
    'direct',
    MB,
  );
  const big = Math.max(5, Math.round(PROXY_N / 10));
  table(
    `32 MB download, n=${big} each`,
    await interleave(variants('/32'), { n: big, warmup: 2 }),
    'direct',
    32 * MB,
  );
} finally {
  await Promise.all([forwarder?.stop(), base?.stop()]);
  await Promise.all([unix.close(), tcp.close()]);
}

// ---- 2. end to end ------------------------------------------------------------------------

const FETCH = (path) => `
import os, time, urllib.request
for name in ("no_proxy", "NO_PROXY"):
    os.environ.pop(name, None)
t = time.perf_counter()
with urllib.request.urlopen("http://${TARGET}${path}", timeout=30) as response:
    size = len(response.read())
print(size, (time.perf_counter() - t) * 1000)
`;
// Through a CONNECT tunnel (what HTTPS uses), to the proxy the variables name.
const TUNNEL = (path) => `
import http.client, os, time, urllib.parse
proxy = urllib.parse.urlsplit(os.environ["http_proxy"])
t = time.perf_counter()
connection = http.client.HTTPConnection(proxy.hostname, proxy.port, timeout=30)
connection.set_tunnel("127.0.0.1", ${origin.address().port})
connection.request("GET", "${path}")
size = len(connection.getresponse().read())
print(size, (time.perf_counter() - t) * 1000)
`;
// The same imports, no fetch: what the run costs without the network.
const NO_FETCH = 'import os, time, urllib.request\nprint(0, 0)';

const mode = values.mode ? { CODEXEC_SANDBOX_MODE: values.mode } : {};
const servers = {
  none: await startServer({ ...mode, CODEXEC_NETWORK: 'none' }),
  host: await startServer({ ...mode, CODEXEC_NETWORK: 'host' }),
  allowlist: await startServer({ ...mode, CODEXEC_NETWORK: 'allowlist', CODEXEC_ALLOWED_DOMAINS: TARGET }),
};
// Searchable by the sandbox's user (landlock mode binds nothing: it opens the host's own path).
const workingDir = mkdtempSync(join(root, 'cold-'));
chmodSync(root, 0o755);
chmodSync(workingDir, 0o777);
const inside = {};
function run(server, code, { label, size, cold } = {}) {
  return async () => {
    const result = await servers[server].call('execute_code', {
      language: 'python',
      code,
      ...(cold && { working_dir: workingDir }),
    });
    const [bytes, fetchMs] = (result?.stdout ?? '').trim().split(' ').map(Number);
    if (!result?.success || (size !== undefined && bytes !== size))
      throw new Error(`${server}: ${JSON.stringify(result).slice(0, 400)}`);
    if (!label) return;
    inside[label] ??= [];
    inside[label].push(fetchMs);
  };
}
const median = (list) => [...list].sort((a, b) => a - b)[Math.floor(list.length / 2)];
try {
  console.log(`\nend to end: python over MCP stdio, ${values.mode ?? 'auto'} mode, paced ${PACE_MS} ms`);
  const download = await interleave(
    {
      'none, no fetch': run('none', NO_FETCH),
      'host, 1 MB': run('host', FETCH('/1'), { label: 'host 1', size: MB }),
      'allowlist, 1 MB': run('allowlist', FETCH('/1'), { label: 'allowlist 1', size: MB }),
    },
    { n: N, gapMs: PACE_MS },
  );
  table(`warm run downloading 1 MB, n=${N}`, download, 'host, 1 MB');
  const n16 = Math.max(5, Math.round(N / 2));
  const download16 = await interleave(
    {
      'host, 16 MB': run('host', FETCH('/16'), { label: 'host 16', size: 16 * MB }),
      'allowlist, 16 MB': run('allowlist', FETCH('/16'), { label: 'allowlist 16', size: 16 * MB }),
      'allowlist, 16 MB CONNECT': run('allowlist', TUNNEL('/16'), { label: 'CONNECT 16', size: 16 * MB }),
    },
    { n: n16, gapMs: PACE_MS, warmup: 2 },
  );
  table(`warm run downloading 16 MB, n=${n16}`, download16, 'host, 16 MB');
  console.log('\n  the fetch alone, timed inside the run (p50):');
  for (const [label, all] of Object.entries(inside)) {
    // Without the warm-up runs' (5 for 1 MB, 2 for 16 MB).
    const list = all.slice(label.endsWith(' 1') ? 5 : 2);
    const size = Number(label.split(' ')[1]);
    console.log(
      `    ${label.padEnd(14)} MB  ${ms(median(list)).padStart(8)} ms  ${((size / median(list)) * 1000).toFixed(0).padStart(5)} MB/s`,
    );
  }
  for (const cold of [false, true]) {
    const start = await interleave(
      { none: run('none', 'print(1)', { cold }), allowlist: run('allowlist', 'print(1)', { cold }) },
      { n: N, gapMs: PACE_MS },
    );
    table(`print(1), ${cold ? 'cold (working_dir)' : 'warm'}, n=${N}`, start, 'none');
  }
} finally {
  await Promise.all(Object.values(servers).map((server) => server.close()));
  origin.close();
  rmSync(root, { recursive: true, force: true });
}
