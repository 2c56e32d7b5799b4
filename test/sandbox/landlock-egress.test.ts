// Sandbox mode landlock with the egress allowlist: no network namespace, so Landlock alone
// says where TCP goes (one connect rule: the proxy's port on the host's loopback, no bind) and
// seccomp which sockets exist (AF_UNIX and TCP). Two TCP servers here stand for the proxy (P) and
// any other service (Q); the runs are cold (python, bash) and, for a root server, zygote-forked.
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SandboxUnavailableError } from '../../src/errors/index.js';
import type { SandboxSpec } from '../../src/sandbox/index.js';
import { LandlockBackend, landlockAbi } from '../../src/sandbox/landlock/index.js';
import {
  type Access,
  landlockScript,
  launchScript,
  networkRefusal,
} from '../../src/sandbox/landlock/rules.js';
import { output } from '../helpers/sandboxed.js';

const root = process.getuid?.() === 0;
const PYTHON = '/usr/bin/python3';
const BASH = '/bin/bash';
const WARM_DRIVER = fileURLToPath(new URL('../../drivers/warm_python.py', import.meta.url));
const LANDLOCK_ADD_RULE = 445;
const RULE_NET_PORT = 2;
const CONNECT_TCP = 2n;

/** A TCP server that counts its connections and answers `pong:<what it got>`. */
interface Listener {
  readonly port: number;
  readonly accepted: () => number;
  readonly close: () => Promise<void>;
}

async function listen(host: string, port = 0): Promise<Listener> {
  let accepted = 0;
  const server: Server = createServer((socket) => {
    accepted++;
    socket.on('error', () => {});
    socket.once('data', (chunk: Buffer) => socket.end(`pong:${chunk.toString()}`));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, resolve);
  });
  const address = server.address();
  if (!address || typeof address !== 'object') throw new Error('no address');
  return {
    port: address.port,
    accepted: () => accepted,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

/** The landlock_add_rule calls of a confine script for net ports: [allowed access, port]. */
function portRules(script: Buffer): [bigint, bigint][] {
  const count = Number(script.readBigUInt64LE(0));
  const rules: [bigint, bigint][] = [];
  for (let i = 0; i < count; i++) {
    const at = 8 + i * 72;
    const nr = script.readBigUInt64LE(at);
    const type = script.readBigUInt64LE(at + 24);
    if (nr !== BigInt(LANDLOCK_ADD_RULE) || type !== BigInt(RULE_NET_PORT)) continue;
    // Argument 2 is a pointer into the script's data: its offset in the encoded script.
    const attr = Number(script.readBigUInt64LE(at + 32));
    rules.push([script.readBigUInt64LE(attr), script.readBigUInt64LE(attr + 8)]);
  }
  return rules;
}

const access = (network: Access['network'], egressPort?: number): Access => ({
  executable: ['/usr'],
  readable: [],
  writable: [],
  devices: [],
  network,
  ...(egressPort !== undefined && { egressPort }),
});

describe('the allowlist’s Landlock rules', () => {
  it('one connect rule for the proxy’s port, in the cold run’s script and the zygote’s alike', () => {
    const cold = launchScript({
      abi: 4,
      access: access('allowlist', 40123),
      seccomp: Buffer.alloc(8),
      rlimits: [],
      argv: ['/bin/true'],
      env: {},
      cwd: '/',
    });
    expect(portRules(cold)).toEqual([[CONNECT_TCP, 40123n]]);
    expect(portRules(landlockScript(7, access('allowlist', 40123)))).toEqual([[CONNECT_TCP, 40123n]]);
    // No port rule when the network is off or the host's.
    expect(portRules(landlockScript(7, access('none')))).toEqual([]);
    expect(portRules(landlockScript(7, access('host')))).toEqual([]);
  });

  it('refuses an allowlist below ABI 4, or without a port, rather than leave TCP unconfined', () => {
    const why = networkRefusal(3, 'allowlist', 40123);
    expect(why).toContain('Landlock ABI 3 has none');
    expect(why).toContain('ABI 4, Linux 6.7');
    expect(networkRefusal(4, 'allowlist', 40123)).toBeUndefined();
    expect(networkRefusal(3, 'none', undefined)).toBeUndefined();
    expect(networkRefusal(7, 'allowlist', undefined)).toContain('TCP port');
    expect(networkRefusal(7, 'allowlist', 0)).toContain('TCP port');
    expect(networkRefusal(7, 'allowlist', 70000)).toContain('TCP port');
    // The builder itself refuses too: no script leaves TCP open for a caller that did not ask.
    expect(() => landlockScript(3, access('allowlist', 40123))).toThrow(SandboxUnavailableError);
    expect(() => landlockScript(7, access('allowlist'))).toThrow(SandboxUnavailableError);
  });
});

describe.runIf(landlockAbi() >= 4)('landlock runs with the egress allowlist', () => {
  const backend = new LandlockBackend();
  let base: string;
  let workspace: string;
  let proxy: Listener;
  let other: Listener;

  beforeAll(async () => {
    await backend.probe(); // runs start after it, as a server's do
    base = mkdtempSync(join(tmpdir(), 'codexec-landlock-egress-'));
    chmodSync(base, 0o755);
    workspace = join(base, 'workspace');
    mkdirSync(workspace, { mode: 0o755 });
    proxy = await listen('127.0.0.1');
    other = await listen('127.0.0.1');
  });

  afterAll(async () => {
    await proxy.close();
    await other.close();
    rmSync(base, { recursive: true, force: true });
  });

  function spec(argv: string[], extra: Partial<SandboxSpec> = {}): SandboxSpec {
    return {
      argv,
      cwd: workspace,
      env: { PATH: '/usr/bin:/bin', HOME: workspace },
      writablePaths: [workspace],
      readablePaths: [],
      limits: { memoryMb: 256, maxProcs: 32, maxFileMb: 16 },
      network: 'allowlist',
      egress: { port: proxy.port },
      stdin: 'ignore',
      ...extra,
    };
  }

  /** `spec` without an egress endpoint. */
  function bare(argv: string[], network: SandboxSpec['network']): SandboxSpec {
    const { egress: _, ...rest } = spec(argv);
    return { ...rest, network };
  }

  // What a run's code can do with the network: each attempt's result or its errno's name. The
  // fastopen_* attempts open TCP with a send (TCP Fast Open), which Landlock never sees: seccomp
  // refuses any send with MSG_FASTOPEN (sendmmsg through ctypes: Python has no wrapper).
  const probe = () => `
import ctypes, errno, json, socket, struct
def attempt(fn):
    try:
        return fn()
    except OSError as e:
        return errno.errorcode.get(e.errno, str(e.errno))
def exchange(port):
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        s.sendall(b"ping")
        got = b""
        while True:
            chunk = s.recv(64)
            if not chunk:
                return got.decode()
            got += chunk
def bind(port):
    with socket.socket() as s:
        s.bind(("127.0.0.1", port))
        return "bound"
def fastopen_sendto(port):
    with socket.socket() as s:
        return s.sendto(b"leak", socket.MSG_FASTOPEN, ("127.0.0.1", port))
def fastopen_sendmsg(port):
    with socket.socket() as s:
        return s.sendmsg([b"leak"], [], socket.MSG_FASTOPEN, ("127.0.0.1", port))
libc = ctypes.CDLL(None, use_errno=True)
class iovec(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]
class msghdr(ctypes.Structure):
    _fields_ = [("name", ctypes.c_void_p), ("namelen", ctypes.c_uint32), ("iov", ctypes.POINTER(iovec)),
                ("iovlen", ctypes.c_size_t), ("control", ctypes.c_void_p), ("controllen", ctypes.c_size_t),
                ("flags", ctypes.c_int)]
class mmsghdr(ctypes.Structure):
    _fields_ = [("hdr", msghdr), ("len", ctypes.c_uint)]
def fastopen_sendmmsg(port):
    address = ctypes.create_string_buffer(struct.pack("=H", socket.AF_INET) + struct.pack("!H", port) + socket.inet_aton("127.0.0.1") + bytes(8), 16)
    data = ctypes.create_string_buffer(b"leak", 4)
    iov = iovec(ctypes.cast(data, ctypes.c_void_p), 4)
    message = mmsghdr(msghdr(ctypes.cast(address, ctypes.c_void_p), 16, ctypes.pointer(iov), 1, None, 0, 0), 0)
    with socket.socket() as s:
        if libc.sendmmsg(s.fileno(), ctypes.byref(message), 1, socket.MSG_FASTOPEN) < 0:
            raise OSError(ctypes.get_errno(), "sendmmsg")
        return "sent"
def fastopen_connect(port):
    # TCP_FASTOPEN_CONNECT defers the SYN to the first write, but the connect() is still made.
    with socket.socket() as s:
        s.setsockopt(socket.IPPROTO_TCP, 30, 1)
        s.connect(("127.0.0.1", port))
        return s.send(b"leak")
def unconnected_sendto(port):
    with socket.socket() as s:
        return s.sendto(b"leak", ("127.0.0.1", port))
def io_uring():
    if libc.syscall(425, 8, ctypes.byref(ctypes.create_string_buffer(120))) < 0:
        raise OSError(ctypes.get_errno(), "io_uring_setup")
    return "ring"
print(json.dumps({
    "proxy": attempt(lambda: exchange(${proxy.port})),
    "other": attempt(lambda: exchange(${other.port})),
    "bind_any": attempt(lambda: bind(0)),
    "bind_proxy_port": attempt(lambda: bind(${proxy.port})),
    "udp": attempt(lambda: socket.socket(socket.AF_INET, socket.SOCK_DGRAM).close() or "created"),
    "raw": attempt(lambda: socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP).close() or "created"),
    "fastopen_sendto": attempt(lambda: fastopen_sendto(${other.port})),
    "fastopen_sendmsg": attempt(lambda: fastopen_sendmsg(${other.port})),
    "fastopen_sendmmsg": attempt(lambda: fastopen_sendmmsg(${other.port})),
    "fastopen_proxy": attempt(lambda: fastopen_sendto(${proxy.port})),
    "fastopen_connect": attempt(lambda: fastopen_connect(${other.port})),
    "unconnected_sendto": attempt(lambda: unconnected_sendto(${other.port})),
    "io_uring": attempt(io_uring),
}))
`;

  const CONFINED = {
    proxy: 'pong:ping',
    other: 'EACCES',
    bind_any: 'EACCES',
    bind_proxy_port: 'EACCES',
    udp: 'EACCES',
    raw: 'EACCES',
    // Refused by seccomp before the kernel connects, whatever the port (the proxy's too).
    fastopen_sendto: 'EPERM',
    fastopen_sendmsg: 'EPERM',
    fastopen_sendmmsg: 'EPERM',
    fastopen_proxy: 'EPERM',
    // Landlock sees this connect(); a send on a stream never connected goes nowhere.
    fastopen_connect: 'EACCES',
    unconnected_sendto: 'EPIPE',
    io_uring: 'EPERM',
  };
  /** With the network off: no TCP socket at all (seccomp), so every attempt fails at its socket(). */
  const OFFLINE = {
    ...CONFINED,
    proxy: 'EACCES',
    fastopen_sendto: 'EACCES',
    fastopen_sendmsg: 'EACCES',
    fastopen_sendmmsg: 'EACCES',
    fastopen_proxy: 'EACCES',
    unconnected_sendto: 'EACCES',
  };

  it('lets a cold python run reach the proxy’s port and nothing else', async () => {
    const before = { proxy: proxy.accepted(), other: other.accepted() };
    const { exit, stdout, stderr } = await output(backend.spawn(spec([PYTHON, '-c', probe()])));
    expect(stderr).toBe('');
    expect(exit.code).toBe(0);
    expect(JSON.parse(stdout)).toEqual(CONFINED);
    expect(proxy.accepted()).toBe(before.proxy + 1);
    expect(other.accepted()).toBe(0);
  });

  it('a cold bash run likewise (/dev/tcp)', async () => {
    const script = [
      `exec 3<>/dev/tcp/127.0.0.1/${proxy.port} || exit 1`,
      'printf ping >&3',
      'read -r -t 5 reply <&3',
      'echo "proxy: $reply"',
      `(exec 4<>/dev/tcp/127.0.0.1/${other.port}) 2>/dev/null`,
      'echo "other: $?"',
    ].join('\n');
    const { exit, stdout } = await output(backend.spawn(spec([BASH, '-c', script])));
    expect(exit.code).toBe(0);
    expect(stdout).toBe('proxy: pong:ping\nother: 1\n');
    expect(other.accepted()).toBe(0);
  });

  it('with the network off, the proxy’s port is no more reachable than any other', async () => {
    const before = proxy.accepted();
    const { exit, stdout } = await output(backend.spawn(bare([PYTHON, '-c', probe()], 'none')));
    expect(exit.code).toBe(0);
    expect(JSON.parse(stdout)).toEqual(OFFLINE);
    expect(proxy.accepted()).toBe(before);
    expect(other.accepted()).toBe(0);
  });

  it('refuses an allowlist run it could not confine so (no port, or a Unix socket)', () => {
    const noPort = bare([PYTHON, '-c', 'pass'], 'allowlist');
    expect(() => backend.spawn(noPort)).toThrow(SandboxUnavailableError);
    expect(() => backend.spawn(noPort)).toThrow(/egress proxy's TCP port/);
    const viaSocket = spec([PYTHON, '-c', 'pass'], {
      egress: { port: proxy.port, socket: join(workspace, 'egress.sock'), python: PYTHON },
    });
    expect(() => backend.spawn(viaSocket)).toThrow(/not through a Unix socket/);
  });

  it('the rule names a port, not an address: the same port elsewhere is reachable too', async () => {
    // Another address's service on the proxy's port number (here 127.0.0.2, standing for another
    // host): Landlock lets the connect through. What a run's code can reach is port P anywhere.
    const elsewhere = await listen('127.0.0.2', proxy.port);
    try {
      const code = `import socket\nsocket.create_connection(("127.0.0.2", ${proxy.port}), timeout=5).close()\nprint("reached")`;
      const { exit, stdout } = await output(backend.spawn(spec([PYTHON, '-c', code])));
      expect([exit.code, stdout]).toEqual([0, 'reached\n']);
      expect(elsewhere.accepted()).toBe(1);
    } finally {
      await elsewhere.close();
    }
  });

  it.runIf(root)('confines a zygote-forked python as a cold run', async () => {
    expect(backend.forksDrivers()).toBe(true);
    const script = join(workspace, 'probe.py');
    writeFileSync(script, probe(), { mode: 0o644 });
    const warm = spec([PYTHON, WARM_DRIVER], { control: true, stdin: 'pipe', zygote: 'only' });
    await backend.reserveFork(warm, 5000);
    // Throws NotForkableError if the zygote did not fork it.
    const proc = backend.spawn(warm);
    const before = proxy.accepted();
    const job = Buffer.from(`\0${script}\0`);
    proc.control?.end(Buffer.concat([Buffer.from(`${job.length} 2\n`), job]));
    const { stdout, stderr } = await output(proc);
    expect(stderr).toBe('');
    expect(JSON.parse(stdout)).toEqual(CONFINED);
    expect(proxy.accepted()).toBe(before + 1);
    expect(other.accepted()).toBe(0);
  });
});
