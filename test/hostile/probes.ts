// Shared pieces of the hostile-code suite: a server with planted secrets, and the probe program.
import { randomBytes } from 'node:crypto';
import {
  chmodSync,
  chownSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { baseEnv, CLI, callTool, startServer, type TestServer } from '../helpers/server.js';

export interface Rig {
  readonly server: TestServer;
  /** The server's HOME, with planted credentials. */
  readonly home: string;
  /** Secret placed in the server's environment and in the planted credentials. */
  readonly canary: string;
  readonly listener: Server;
  /** An abstract Unix socket of the host's (Linux), answering as the loopback listener does. */
  readonly abstract: string;
  /** A pathname Unix socket of the host's that every user may connect to (mode 0777, in /tmp). */
  readonly unixPath: string;
  readonly port: number;
  close(): Promise<void>;
}

/** `uid`: run the server as this (non-root) user instead of the test's own. */
export async function startRig(env: Record<string, string> = {}, uid?: number): Promise<Rig> {
  const canary = `canary-${randomBytes(8).toString('hex')}`;
  const home = mkdtempSync(join(tmpdir(), 'codexec-hostile-home-'));
  mkdirSync(join(home, '.ssh'), { mode: 0o700 });
  writeFileSync(join(home, '.ssh', 'id_rsa'), `-----BEGIN KEY----- ${canary}\n`, { mode: 0o600 });
  if (uid !== undefined) {
    mkdirSync(join(home, '.codexec'));
    for (const path of ['', '.ssh', '.ssh/id_rsa', '.codexec']) chownSync(join(home, path), uid, uid);
  }
  const listener = createServer((socket) => socket.end('hello from the host\n'));
  await new Promise<void>((resolve) => listener.listen(0, '127.0.0.1', resolve));
  const abstract = `codexec-hostile-${randomBytes(6).toString('hex')}`;
  const abstractListener = createServer((socket) => socket.end('hello from the host\n'));
  await new Promise<void>((resolve) => abstractListener.listen(`\0${abstract}`, resolve));
  const unixPath = join(tmpdir(), `${abstract}.sock`);
  const unixListener = createServer((socket) => socket.end('hello from the host\n'));
  await new Promise<void>((resolve) => unixListener.listen(unixPath, resolve));
  chmodSync(unixPath, 0o777);
  const address = listener.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  const serverEnv = { HOME: home, CODEXEC_TEST_CANARY: canary, ...env };
  const server =
    uid === undefined
      ? await startServer({ env: serverEnv })
      : await startServerAs(uid, join(home, '.codexec'), serverEnv);
  return {
    server,
    home,
    canary,
    listener,
    abstract,
    unixPath,
    port,
    async close() {
      await server.close();
      listener.close();
      abstractListener.close();
      unixListener.close();
      rmSync(home, { recursive: true, force: true });
    },
  };
}

export interface RunResult {
  success: boolean;
  execution_id: string;
  stdout: string;
  stderr: string;
  exit_code: number | null;
  timed_out: boolean;
  sandbox_mode: string;
  working_dir: string;
  warm: boolean;
  limit?: string;
}

export async function run(
  rig: Rig,
  language: string,
  code: string,
  extra: Record<string, unknown> = {},
): Promise<RunResult> {
  const { isError, value } = await callTool<RunResult>(rig.server.client, 'execute_code', {
    language,
    code,
    ...extra,
  });
  if (isError) throw new Error(`execute_code refused: ${JSON.stringify(value)}`);
  return value;
}

/** `codexec serve` as another user (through setpriv), connected with the official MCP client. */
async function startServerAs(
  uid: number,
  codexecHome: string,
  env: Record<string, string>,
): Promise<TestServer> {
  const transport = new StdioClientTransport({
    command: '/usr/bin/setpriv',
    args: [`--reuid=${uid}`, `--regid=${uid}`, '--clear-groups', process.execPath, CLI, 'serve'],
    env: { ...baseEnv(codexecHome), ...env },
    stderr: 'pipe',
  });
  let stderr = '';
  transport.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const client = new Client({ name: 'codexec-hostile', version: '1.0.0' });
  await client.connect(transport);
  return {
    client,
    home: codexecHome,
    pid: transport.pid ?? 0,
    stderr: () => stderr,
    close: () => client.close(),
  };
}

/** Host processes whose command line contains `marker` (for "nothing outlives the run"). */
export function hostProcessesWith(marker: string): number[] {
  const found: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name) || Number(name) === process.pid) continue;
    try {
      if (readFileSync(`/proc/${name}/cmdline`, 'utf8').includes(marker)) found.push(Number(name));
    } catch {
      // exited meanwhile
    }
  }
  return found;
}

export function nameserver(): string {
  try {
    const match = /^nameserver\s+(\S+)/m.exec(readFileSync('/etc/resolv.conf', 'utf8'));
    return match?.[1] ?? '127.0.0.53';
  } catch {
    return '127.0.0.53';
  }
}

/**
 * One Python program that tries every read-only escape and prints what it got as JSON. Writes go
 * only to paths the test removes afterwards.
 */
export function probeProgram(rig: Rig, writeTargets: readonly string[], tmpMarker: string): string {
  const config = {
    secret: join(rig.home, '.ssh', 'id_rsa'),
    canary: rig.canary,
    port: rig.port,
    nameserver: nameserver(),
    writes: writeTargets,
    tmpMarker,
    abstract: rig.abstract,
    unixPath: rig.unixPath,
    server: rig.server.pid,
  };
  return `
import json, os, socket, sys
cfg = json.loads(${JSON.stringify(JSON.stringify(config))})
out = {}
def attempt(fn):
    try:
        return {'ok': True, 'value': fn()}
    except Exception as e:
        return {'ok': False, 'error': type(e).__name__ + ': ' + str(e)}
out['secret'] = attempt(lambda: open(cfg['secret']).read())
out['secret_home'] = attempt(lambda: open(os.path.expanduser('~/.ssh/id_rsa')).read())
out['env_canary'] = any(cfg['canary'] in v for v in os.environ.values())
hits = []
for pid in os.listdir('/proc'):
    if not pid.isdigit():
        continue
    for name in ('environ', 'cmdline'):
        try:
            with open('/proc/%s/%s' % (pid, name), 'rb') as f:
                if cfg['canary'].encode() in f.read():
                    hits.append('/proc/%s/%s' % (pid, name))
        except Exception:
            pass
out['proc_hits'] = hits
out['shadow'] = attempt(lambda: len(open('/etc/shadow').read()))
out['root_dir'] = attempt(lambda: sorted(os.listdir('/root')))
def loopback():
    s = socket.create_connection(('127.0.0.1', cfg['port']), timeout=2)
    return s.recv(100).decode()
out['loopback'] = attempt(loopback)
def dns():
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.settimeout(2)
    query = b'\\x12\\x34\\x01\\x00\\x00\\x01\\x00\\x00\\x00\\x00\\x00\\x00\\x07example\\x03com\\x00\\x00\\x01\\x00\\x01'
    s.sendto(query, (cfg['nameserver'], 53))
    return len(s.recv(512))
out['dns'] = attempt(dns)
out['inet_socket'] = attempt(lambda: socket.socket(socket.AF_INET, socket.SOCK_STREAM).close())
def abstract():
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(2)
    # Node binds an abstract name padded with NULs to the whole sun_path (108 bytes).
    s.connect(('\\0' + cfg['abstract']).ljust(108, '\\0'))
    return s.recv(100).decode()
out['abstract_socket'] = attempt(abstract)
def unix_path():
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(2)
    s.connect(cfg['unixPath'])
    return s.recv(100).decode()
out['unix_socket'] = attempt(unix_path)
out['sees_server'] = os.path.exists('/proc/%d' % cfg['server'])
out['stat_secret'] = attempt(lambda: os.stat(cfg['secret']).st_size)
# Signal 0 to the server: only whether a signal could reach it (nothing is sent).
out['signal_server'] = attempt(lambda: os.kill(cfg['server'], 0))
def write(path):
    with open(path, 'w') as f:
        f.write('pwned')
    return path
out['writes'] = {p: attempt(lambda p=p: write(p)) for p in cfg['writes']}
# The temporary directory programs are told of (TMPDIR: landlock mode's own per run).
import tempfile
own_tmp = os.path.join(tempfile.gettempdir(), os.path.basename(cfg['tmpMarker']) + '-own')
out['tmp_seen_before'] = os.path.exists(cfg['tmpMarker'])
out['tmpdir_seen_before'] = os.path.exists(own_tmp)
out['tmp_write'] = attempt(lambda: write(cfg['tmpMarker']))
out['tmpdir_write'] = attempt(lambda: write(own_tmp))
out['cap_eff'] = [l.split()[1] for l in open('/proc/self/status') if l.startswith('CapEff')][0]
out['uid'] = os.getuid()
fds = {}
for fd in os.listdir('/proc/self/fd'):
    try:
        fds[fd] = os.readlink('/proc/self/fd/' + fd)
    except OSError:
        pass
out['fds'] = fds
print(json.dumps(out))
`;
}
