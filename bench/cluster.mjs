// A throwaway cluster for benchmarks: PostgreSQL (Debian's, initdb in a temp dir, as
// test/helpers/postgres.ts does), `codexec serve --http` replicas over it, and Debian's HAProxy
// running the shipped deploy/haproxy.cfg (its `bind` and `server` lines replaced, as
// test/helpers/haproxy.ts does). Plain .mjs: benches run without a TypeScript loader.
import { execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import {
  chownSync,
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { connect, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { CLI } from './lib.mjs';

const HAPROXY = '/usr/sbin/haproxy';
const SHIPPED_CONFIG = resolve(import.meta.dirname, '../deploy/haproxy.cfg');
const sleep = (ms) => new Promise((done) => setTimeout(done, ms));

export async function freePort() {
  return await new Promise((done, fail) => {
    const server = createServer();
    server.once('error', fail);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => done(port));
    });
  });
}

function accepts(port) {
  return new Promise((done) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      done(true);
    });
    socket.once('error', () => done(false));
  });
}

/** PostgreSQL on a loopback port, durability off; as root, run as Debian's `postgres` user. */
/** `settings`: more `-c name=value` for the server (a bench's own cache size, say). */
export async function startPostgres({ settings: extra = [] } = {}) {
  const root = '/usr/lib/postgresql';
  const version = existsSync(root)
    ? readdirSync(root)
        .sort((a, b) => Number(b) - Number(a))
        .find((v) => existsSync(join(root, v, 'bin', 'initdb')))
    : undefined;
  if (!version) throw new Error('PostgreSQL is not installed (apt-get install postgresql)');
  const bin = join(root, version, 'bin');
  const dir = mkdtempSync(join(tmpdir(), 'codexec-bench-pg-'));
  const asRoot = process.getuid?.() === 0;
  if (asRoot) {
    const id = (flag) => Number(execFileSync('id', [flag, 'postgres']).toString().trim());
    chownSync(dir, id('-u'), id('-g'));
  }
  const as = (program, args) =>
    asRoot ? ['runuser', ['-u', 'postgres', '--', join(bin, program), ...args]] : [join(bin, program), args];
  const data = join(dir, 'data');
  const [initdb, initArgs] = as('initdb', [
    '-D',
    data,
    '-A',
    'trust',
    '-U',
    'codexec',
    '-E',
    'UTF8',
    '--no-sync',
  ]);
  execFileSync(initdb, initArgs, { stdio: 'ignore' });
  const port = await freePort();
  const settings = [
    'listen_addresses=127.0.0.1',
    'fsync=off',
    'synchronous_commit=off',
    'max_connections=200',
    ...extra,
  ];
  const [postgres, args] = as('postgres', [
    '-D',
    data,
    '-p',
    String(port),
    '-k',
    dir,
    ...settings.flatMap((s) => ['-c', s]),
  ]);
  // Its own process group: runuser passes no signal on, so stop() signals the whole group.
  const child = spawn(postgres, args, { stdio: 'ignore', detached: true });
  for (const deadline = Date.now() + 30_000; ; ) {
    if (child.exitCode !== null) throw new Error('postgres exited');
    try {
      execFileSync(join(bin, 'pg_isready'), ['-h', '127.0.0.1', '-p', String(port), '-q']);
      break;
    } catch {
      if (Date.now() > deadline) throw new Error('postgres did not start');
      await sleep(100);
    }
  }
  return {
    url: `postgres://codexec@127.0.0.1:${port}/postgres`,
    async stop() {
      if (child.exitCode === null) {
        const exited = new Promise((done) => child.once('exit', done));
        process.kill(-child.pid, 'SIGINT'); // fast shutdown
        await Promise.race([exited, sleep(10_000)]);
        if (child.exitCode === null) process.kill(-child.pid, 'SIGKILL');
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** A file of 32 random bytes, 0600: the approval key every replica shares. */
export function approvalKeyFile() {
  const dir = mkdtempSync(join(tmpdir(), 'codexec-bench-key-'));
  const file = join(dir, 'approval-key');
  writeFileSync(file, randomBytes(32), { mode: 0o600 });
  return { file, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

/** `codexec serve --http --port 0` with its own home; resolves with its URL once it listens. */
export async function startReplica(env) {
  const home = mkdtempSync(join(tmpdir(), 'codexec-bench-'));
  const child = spawn(process.execPath, [CLI, 'serve', '--http', '--port', '0'], {
    env: { PATH: process.env.PATH, HOME: process.env.HOME, LANG: 'C.UTF-8', CODEXEC_HOME: home, ...env },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  const exited = new Promise((done) => child.once('exit', done));
  const url = await new Promise((done, fail) => {
    child.stderr.on('data', (chunk) => {
      stderr += chunk;
      if (process.env.BENCH_STDERR) process.stderr.write(chunk);
      const match = /listening on (http:\/\/\S+)/.exec(stderr);
      if (match) done(match[1]);
    });
    void exited.then((code) => fail(new Error(`replica exited ${code}: ${stderr}`)));
  });
  return {
    url,
    hostPort: new URL(url).host,
    async stop() {
      if (child.exitCode === null) child.kill('SIGTERM');
      await exited.catch(() => {});
      rmSync(home, { recursive: true, force: true });
    },
  };
}

/** HAProxy from deploy/haproxy.cfg over `backends` (host:port each). */
export async function startHaproxy(backends) {
  if (!existsSync(HAPROXY)) throw new Error('HAProxy is not installed (apt-get install haproxy)');
  const dir = mkdtempSync(join(tmpdir(), 'codexec-bench-haproxy-'));
  const port = await freePort();
  const lines = readFileSync(SHIPPED_CONFIG, 'utf8').split('\n');
  const firstServer = lines.findIndex((line) => /^\s*server\s/.test(line));
  const config = lines.flatMap((line, i) => {
    if (/^\s*bind\s/.test(line)) return [`    bind 127.0.0.1:${port}`];
    if (i === firstServer) return backends.map((backend, n) => `    server replica${n + 1} ${backend}`);
    return /^\s*server\s/.test(line) ? [] : [line];
  });
  const file = join(dir, 'haproxy.cfg');
  writeFileSync(file, config.join('\n'));
  const child = spawn(HAPROXY, ['-db', '-f', file], { stdio: ['ignore', 'pipe', 'pipe'] });
  // Requests per server, from the request log (`option httplog`: "<backend>/<server>"), and
  // where each request's time went: TR/Tw/Tc/Tr/Ta (request head, queue, connect, response, all).
  const served = new Map();
  const timings = [];
  let partial = '';
  child.stdout.on('data', (chunk) => {
    const text = partial + chunk;
    const done = text.split('\n');
    partial = done.pop() ?? '';
    for (const line of done) {
      const server = /codexec_replicas\/(\S+)/.exec(line)?.[1];
      if (server) served.set(server, (served.get(server) ?? 0) + 1);
      const t = / (-?\d+)\/(-?\d+)\/(-?\d+)\/(-?\d+)\/(-?\d+) \d{3} /.exec(line);
      if (t)
        timings.push({
          queue: Number(t[2]),
          connect: Number(t[3]),
          response: Number(t[4]),
          total: Number(t[5]),
        });
    }
  });
  child.stderr.resume();
  const exited = new Promise((done) => child.once('exit', done));
  for (const deadline = Date.now() + 10_000; !(await accepts(port)); await sleep(50)) {
    if (child.exitCode !== null || Date.now() > deadline) throw new Error('haproxy did not start');
  }
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    /** Requests each server answered so far, e.g. { replica1: 210, replica2: 209 }. */
    served: () => Object.fromEntries([...served].sort()),
    /** Per-request timings (ms) from the log so far. */
    timings: () => [...timings],
    async stop() {
      if (child.exitCode === null) child.kill('SIGTERM');
      await exited;
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
