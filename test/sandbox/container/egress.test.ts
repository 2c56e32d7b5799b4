// The egress allowlist in sandbox mode docker: a container with only loopback, where the
// forwarder (drivers/egress_forward.py) relays 127.0.0.1:PORT to the proxy's Unix socket in the
// workspace. The command line as data, then the real backend, engine and image under each runtime
// of RUNTIMES, with a tiny "proxy" in the test that answers each connection with a fixed reply.
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { networkInterfaces, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  buildContainerArgs,
  buildExecArgs,
  type ContainerRun,
  containerNetwork,
} from '../../../src/sandbox/container/args.js';
import { ContainerBackend } from '../../../src/sandbox/container/index.js';
import { FORWARDER as EGRESS_FORWARDER } from '../../../src/sandbox/host/egress.js';
import { DRIVERS } from '../../../src/sandbox/host/zygote.js';
import type { SandboxedProcess, SandboxSpec } from '../../../src/sandbox/index.js';
import { DOCKER_MODE, ensureImage, IMAGE, RUNTIMES } from './engine.js';

const PORT = 3128;
/** The forwarder as the image's python runs it, before its socket and port. */
const FORWARDER = ['/usr/bin/python3', '-I', '-S', '/opt/codexec/drivers/egress_forward.py'];
const REPLY = 'HTTP/1.1 200 OK\r\n\r\nproxied';
const dirs: string[] = [];
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

function workspace(): string {
  const dir = mkdtempSync(join(tmpdir(), 'codexec-egress-'));
  dirs.push(dir);
  return dir;
}

function spec(dir: string, argv: string[], extra: Partial<SandboxSpec> = {}): SandboxSpec {
  return {
    argv,
    cwd: dir,
    env: { PATH: '/usr/bin:/bin' },
    writablePaths: [dir],
    readablePaths: [],
    limits: { memoryMb: 256, maxProcs: 64, maxFileMb: 8 },
    network: 'allowlist',
    egress: { socket: join(dir, 'proxy.sock'), port: PORT, python: '/usr/bin/python3' },
    stdin: 'ignore',
    ...extra,
  };
}

describe('the command line of an allowlist run', () => {
  const dir = workspace();
  const run: ContainerRun = {
    name: 'codexec-test-0',
    labels: { codexec: '1' },
    image: {
      name: 'img',
      interpreters: { python: '/usr/bin/python3', bash: '/bin/bash' },
      path: ['/usr/bin'],
    },
    user: { uid: 65534, gid: 65534 },
    memory: '256m',
    cpus: 1,
    network: 'none',
    wrapper: join(DRIVERS, 'container_init.sh'),
    controlLauncher: join(DRIVERS, 'container_control.py'),
  };
  // The backend adds the wrapper and the forwarder (in codexec's drivers, mounted whole).
  const allowlist = spec(dir, ['/opt/host/python3.11', join(dir, 'main.py')], {
    readablePaths: [run.wrapper, EGRESS_FORWARDER],
  });
  const tail = (args: string[]) => args.slice(args.indexOf('img') + 1);

  it('gets a network of its own with only loopback, whatever network is configured', () => {
    expect(containerNetwork(allowlist, 'bridge')).toBe('none');
    expect(containerNetwork({ ...allowlist, network: 'none' }, 'bridge')).toBe('bridge');
    expect(containerNetwork({ ...allowlist, network: 'host' }, 'none')).toBe('host');
  });

  it('refuses a proxy the container cannot reach: no socket, or one outside its mounts', () => {
    const { socket: _, ...port } = allowlist.egress ?? { port: PORT };
    expect(() => containerNetwork({ ...allowlist, egress: port }, 'none')).toThrow(/needs egress.socket/);
    const outside = { ...allowlist, egress: { ...port, socket: '/run/proxy.sock' } };
    expect(() => containerNetwork(outside, 'none')).toThrow(/outside the run's writable paths/);
  });

  it('starts the program behind the forwarder, inside the wrapper, paths mapped', () => {
    expect(tail(buildContainerArgs(allowlist, run))).toEqual([
      '/bin/bash',
      '/opt/codexec/drivers/container_init.sh',
      'run',
      '/workspace/.codexec-limit',
      '-',
      ...FORWARDER,
      '/workspace/proxy.sock',
      String(PORT),
      '/usr/bin/python3',
      '/workspace/main.py',
    ]);
  });

  it('puts the forwarder before the control launcher (its relay never holds the channel)', () => {
    const args = tail(buildContainerArgs({ ...allowlist, control: true }, run));
    expect(args.slice(5, 11)).toEqual([...FORWARDER, '/workspace/proxy.sock', String(PORT)]);
    expect(args.slice(11)).toEqual([
      '/usr/bin/python3',
      '-I',
      '-S',
      '/opt/codexec/drivers/container_control.py',
      '/workspace/.codexec-control',
      '/usr/bin/python3',
      '/workspace/main.py',
    ]);
  });

  it('is never exec’d in a persistent container (one network for all its commands)', () => {
    const mounts = [{ host: dir, inside: '/workspace', writable: true }];
    expect(() =>
      buildExecArgs(allowlist, run, mounts, { limit: join(dir, 'note'), pidFile: '/tmp/p' }),
    ).toThrow(/persistent container/);
  });
});

/** A "proxy" on a Unix socket: answers each connection with REPLY, counts them, keeps what it got. */
async function proxy(path: string): Promise<{ server: Server; connections: () => number; got: string[] }> {
  let count = 0;
  const got: string[] = [];
  const server = createServer((socket) => {
    count++;
    let data = '';
    socket.on('data', (chunk: Buffer) => {
      data += chunk;
      if (data.includes('\r\n\r\n')) {
        got.push(data);
        socket.end(REPLY);
      }
    });
    socket.on('error', () => {});
  });
  await new Promise<void>((resolve) => server.listen(path, resolve));
  chmodSync(path, 0o666);
  return { server, connections: () => count, got };
}

/** An address of the host that is not loopback (the default route's interface, where there is one). */
const HOST_ADDRESS =
  Object.values(networkInterfaces())
    .flat()
    .find((a) => a && a.family === 'IPv4' && !a.internal)?.address ?? '1.1.1.1';

/** The program in the container: through the proxy, then straight out (TCP and UDP), exit 7. */
const PROGRAM = `
import errno, os, socket, sys
s = socket.create_connection(("127.0.0.1", ${PORT}), timeout=10)
s.sendall(b"GET http://example.com/ HTTP/1.1\\r\\nHost: example.com\\r\\n\\r\\n")
reply = b""
while True:
    chunk = s.recv(4096)
    if not chunk: break
    reply += chunk
print("reply", reply.decode().split("\\r\\n\\r\\n")[1])
print("parent", "container_init.sh" in open("/proc/%d/cmdline" % os.getppid()).read())
for host in (sys.argv[1], "1.1.1.1"):
    t = socket.socket()
    t.settimeout(5)
    try:
        t.connect((host, 443)); print("tcp connected")
    except OSError as e:
        print("tcp", errno.errorcode.get(e.errno, e))
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
try:
    u.sendto(b"x", ("1.1.1.1", 53)); print("udp sent")
except OSError as e:
    print("udp", errno.errorcode.get(e.errno, e))
sys.stdout.flush()
sys.exit(7)
`;

async function output(proc: SandboxedProcess) {
  let stdout = '';
  let stderr = '';
  proc.stdout.on('data', (chunk: Buffer) => (stdout += chunk));
  proc.stderr.on('data', (chunk: Buffer) => (stderr += chunk));
  // The run ends when its program does: the relay it leaves behind holds nothing up.
  const exit = await Promise.race([
    proc.exited,
    new Promise<never>((_, reject) => setTimeout(() => reject(new Error('the run did not end')), 40_000)),
  ]);
  return { exit, stdout, stderr };
}

beforeAll(() => ensureImage(), 600_000);

describe.each(RUNTIMES)('runtime $name', ({ name, env, missing }) => {
  if (missing) console.warn(`docker-mode egress tests under runtime ${name} skipped: ${missing}`);
  describe.skipIf(missing)('an allowlist run in a container', () => {
    const backend = new ContainerBackend({
      engine: env.CODEXEC_CONTAINER_ENGINE === 'docker' ? 'docker' : 'podman',
      ...(env.CODEXEC_DOCKER_RUNTIME && { runtime: env.CODEXEC_DOCKER_RUNTIME }),
      image: IMAGE,
      memory: '256m',
      cpu: 1,
      network: DOCKER_MODE.CODEXEC_DOCKER_NETWORK ?? 'none',
    });
    beforeAll(async () => {
      expect(await backend.probe()).toEqual({ available: true });
    });
    afterAll(() => backend.shutdown());

    /** Run PROGRAM in a container of its own for `extra`; the proxy's count before and after. */
    async function runProgram(extra: Partial<SandboxSpec> = {}) {
      const dir = workspace();
      writeFileSync(join(dir, 'main.py'), PROGRAM);
      const fake = await proxy(join(dir, 'proxy.sock'));
      try {
        const proc = backend.spawn(
          spec(dir, ['/usr/bin/python3', join(dir, 'main.py'), HOST_ADDRESS], extra),
        );
        try {
          return { ...(await output(proc)), connections: fake.connections(), got: fake.got };
        } finally {
          await proc.dispose();
        }
      } finally {
        fake.server.close();
      }
    }

    it('reaches the proxy on 127.0.0.1 and nothing else; its exit status and output are its own', async () => {
      const { exit, stdout, stderr, connections, got } = await runProgram();
      // No route: runc's kernel says the network is unreachable, gVisor's netstack the host.
      expect(stdout, stderr).toMatch(
        /^reply proxied\nparent True\n(tcp E(NET|HOST)UNREACH\n){2}udp E(NET|HOST)UNREACH\n$/,
      );
      expect(exit).toMatchObject({ code: 7, signal: null });
      expect(connections).toBe(1);
      expect(got[0]).toMatch(/^GET http:\/\/example\.com\/ HTTP\/1\.1\r\n/);
    });

    it('runs execute_command’s allowlist runs in containers of their own, one after another', async () => {
      // A persistent container's commands share one network: a second forwarder would find the
      // port held by the first one's relay.
      for (let i = 0; i < 2; i++) {
        const { exit, stdout, stderr, connections } = await runProgram({
          persistent: { key: `egress-test-${name}`, mounts: [tmpdir()] },
        });
        expect(stdout.split('\n')[0], stderr).toBe('reply proxied');
        expect(exit.code).toBe(7);
        expect(connections).toBe(1);
      }
    });

    it('starts a warm driver behind the forwarder before the proxy exists; its channel still works', async () => {
      const dir = workspace();
      // A warm driver: waits for its run on fd 3, then reaches the proxy and reports on fd 3.
      writeFileSync(
        join(dir, 'main.py'),
        'import os, socket\nchannel = os.fdopen(3, "rb+", buffering=0)\nchannel.readline()\n' +
          `s = socket.create_connection(("127.0.0.1", ${PORT}), timeout=10)\n` +
          's.sendall(b"GET / HTTP/1.1\\r\\n\\r\\n")\nreply = b""\nwhile True:\n    chunk = s.recv(4096)\n' +
          '    if not chunk: break\n    reply += chunk\nchannel.write(reply.split(b"\\r\\n\\r\\n")[1] + b"\\n")\n',
      );
      const proc = backend.spawn(spec(dir, ['/usr/bin/python3', join(dir, 'main.py')], { control: true }));
      try {
        const channel = proc.control;
        if (!channel) throw new Error('no control channel');
        let said = '';
        channel.on('data', (chunk: Buffer) => (said += chunk));
        // The run is known only now: its proxy starts after the container did.
        const fake = await proxy(join(dir, 'proxy.sock'));
        try {
          channel.write('go\n');
          const end = Date.now() + 40_000;
          while (!said.includes('\n') && Date.now() < end) await new Promise((r) => setTimeout(r, 100));
          expect(said).toBe('proxied\n');
          expect(fake.connections()).toBe(1);
        } finally {
          fake.server.close();
        }
      } finally {
        await proc.dispose();
      }
    });
  });
});
