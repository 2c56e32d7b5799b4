import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** A throwaway PostgreSQL cluster on a loopback port (Debian's `postgresql`, installed by .ci/run). */
export interface TestPostgres {
  /** postgres://codexec@127.0.0.1:<port>/postgres */
  readonly url: string;
  readonly port: number;
  /** A fresh database on the cluster: its URL. */
  createDatabase(name: string): Promise<string>;
  stop(): Promise<void>;
}

/** Debian puts each major version's programs under /usr/lib/postgresql/<major>/bin. */
function binDir(): string {
  const root = '/usr/lib/postgresql';
  const versions = existsSync(root) ? readdirSync(root).sort((a, b) => Number(b) - Number(a)) : [];
  for (const version of versions)
    if (existsSync(join(root, version, 'bin', 'initdb'))) return join(root, version, 'bin');
  throw new Error('PostgreSQL is not installed (apt-get install postgresql)');
}

export async function freePort(): Promise<number> {
  return await new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

/**
 * initdb in a temp directory and a server on 127.0.0.1 with durability off (a test's data is
 * thrown away). PostgreSQL refuses to run as root: as root, the cluster belongs to the
 * `postgres` user Debian's package made.
 */
export async function startPostgres(): Promise<TestPostgres> {
  const bin = binDir();
  const dir = mkdtempSync(join(tmpdir(), 'codexec-pg-'));
  const asRoot = process.getuid?.() === 0;
  const owner = asRoot ? Number(execFileSync('id', ['-u', 'postgres']).toString().trim()) : undefined;
  if (owner !== undefined)
    chownSync(dir, owner, Number(execFileSync('id', ['-g', 'postgres']).toString().trim()));
  const as = (program: string, args: string[]): [string, string[]] =>
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
  const [postgres, args] = as('postgres', [
    '-D',
    data,
    '-p',
    String(port),
    '-k',
    dir,
    '-c',
    'listen_addresses=127.0.0.1',
    '-c',
    'fsync=off',
    '-c',
    'synchronous_commit=off',
    '-c',
    'full_page_writes=off',
    '-c',
    'max_connections=200',
  ]);
  const child: ChildProcess = spawn(postgres, args, { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr = (stderr + chunk.toString()).slice(-4000);
  });
  const url = `postgres://codexec@127.0.0.1:${port}/postgres`;
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`postgres exited: ${stderr}`);
    try {
      execFileSync(join(bin, 'pg_isready'), ['-h', '127.0.0.1', '-p', String(port), '-q']);
      break;
    } catch {
      if (Date.now() > deadline) throw new Error(`postgres did not start: ${stderr}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
  return {
    url,
    port,
    async createDatabase(name) {
      execFileSync(join(bin, 'createdb'), ['-h', '127.0.0.1', '-p', String(port), '-U', 'codexec', name]);
      return `postgres://codexec@127.0.0.1:${port}/${name}`;
    },
    async stop() {
      if (child.exitCode === null) {
        const exited = new Promise((resolve) => child.once('exit', resolve));
        // The postmaster itself (runuser does not pass signals on): SIGQUIT is the immediate
        // shutdown, fine for data thrown away next.
        const pid = Number(readFileSync(join(data, 'postmaster.pid'), 'utf8').split('\n')[0]);
        if (pid > 0) process.kill(pid, 'SIGQUIT');
        else child.kill('SIGKILL');
        await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, 10_000))]);
        if (child.exitCode === null) child.kill('SIGKILL');
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
