// A TCP connection opened by a send (TCP Fast Open: sendto, sendmsg or sendmmsg with MSG_FASTOPEN)
// is never made with connect(), the call Landlock checks: in landlock mode with the allowlist it
// reached any port until seccomp refused such sends. The real server, a service on the host's
// loopback the code must not reach, and a listed origin it reaches through the proxy.
import { createServer as createHttp, type Server as HttpServer } from 'node:http';
import { createServer, type Server } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { landlockAbi } from '../../src/sandbox/landlock/index.js';
import { callTool, startServer, type TestServer } from '../helpers/server.js';

interface Run {
  success: boolean;
  stdout: string;
  stderr: string;
  network_denied?: Array<{ host: string; port: number }>;
}

async function listening<T extends Server | HttpServer>(server: T): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (!address || typeof address !== 'object') throw new Error('no address');
  return address.port;
}

// Each attempt's result, or its errno's name; sendmmsg through ctypes (Python has no wrapper).
const ATTACK = (port: number) => `
import ctypes, errno, json, socket, struct
def attempt(fn):
    try:
        return fn()
    except OSError as e:
        return errno.errorcode.get(e.errno, str(e.errno))
def sendto():
    with socket.socket() as s:
        return s.sendto(b"leak", socket.MSG_FASTOPEN, ("127.0.0.1", ${port}))
def sendmsg():
    with socket.socket(socket.AF_INET6) as s:
        return s.sendmsg([b"leak"], [], socket.MSG_FASTOPEN, ("::ffff:127.0.0.1", ${port}))
class iovec(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]
class msghdr(ctypes.Structure):
    _fields_ = [("name", ctypes.c_void_p), ("namelen", ctypes.c_uint32), ("iov", ctypes.POINTER(iovec)),
                ("iovlen", ctypes.c_size_t), ("control", ctypes.c_void_p), ("controllen", ctypes.c_size_t),
                ("flags", ctypes.c_int)]
class mmsghdr(ctypes.Structure):
    _fields_ = [("hdr", msghdr), ("len", ctypes.c_uint)]
def sendmmsg():
    libc = ctypes.CDLL(None, use_errno=True)
    address = ctypes.create_string_buffer(struct.pack("=H", socket.AF_INET) + struct.pack("!H", ${port}) + socket.inet_aton("127.0.0.1") + bytes(8), 16)
    data = ctypes.create_string_buffer(b"leak", 4)
    iov = iovec(ctypes.cast(data, ctypes.c_void_p), 4)
    message = mmsghdr(msghdr(ctypes.cast(address, ctypes.c_void_p), 16, ctypes.pointer(iov), 1, None, 0, 0), 0)
    with socket.socket() as s:
        if libc.sendmmsg(s.fileno(), ctypes.byref(message), 1, socket.MSG_FASTOPEN) < 0:
            raise OSError(ctypes.get_errno(), "sendmmsg")
        return "sent"
print(json.dumps({"sendto": attempt(sendto), "sendmsg": attempt(sendmsg), "sendmmsg": attempt(sendmmsg)}))
`;

const FETCH = (port: number) => `
import os, urllib.request
for name in ("no_proxy", "NO_PROXY"):
    os.environ.pop(name, None)
with urllib.request.urlopen("http://localhost:${port}/", timeout=20) as response:
    print(response.status, response.read().decode())
`;

const MODES = [
  // TCP rules need Landlock ABI 4; below it landlock mode refuses the allowlist.
  { mode: 'landlock', missing: landlockAbi() < 4 },
  { mode: 'namespace', missing: false },
];

describe.each(MODES)('a send that would open TCP without connect(), in $mode mode', ({ mode, missing }) => {
  describe.skipIf(missing)(`${mode} mode with the allowlist`, () => {
    let server: TestServer;
    let service: Server;
    let servicePort: number;
    let origin: HttpServer;
    let originPort: number;
    let accepted = 0;
    let received = '';

    beforeAll(async () => {
      service = createServer((socket) => {
        accepted++;
        socket.on('data', (chunk: Buffer) => {
          received += chunk.toString();
        });
        socket.on('error', () => {});
      });
      servicePort = await listening(service);
      origin = createHttp((_request, response) => response.end('listed'));
      originPort = await listening(origin);
      server = await startServer({
        env: {
          CODEXEC_SANDBOX_MODE: mode,
          CODEXEC_NETWORK: 'allowlist',
          CODEXEC_ALLOWED_DOMAINS: `localhost:${originPort}`,
        },
      });
    });

    afterAll(async () => {
      await server?.close();
      service?.close();
      origin?.close();
    });

    const python = async (code: string) =>
      (await callTool<Run>(server.client, 'execute_code', { language: 'python', code })).value;

    it('sendto, sendmsg and sendmmsg with MSG_FASTOPEN fail, and the service receives nothing', async () => {
      const run = await python(ATTACK(servicePort));
      expect(run.stderr).toBe('');
      expect(JSON.parse(run.stdout)).toEqual({ sendto: 'EPERM', sendmsg: 'EPERM', sendmmsg: 'EPERM' });
      // The server's answer is all there is to wait for: the sends were refused before any SYN.
      expect([accepted, received]).toEqual([0, '']);
    });

    it('a listed host is still reached through the proxy', async () => {
      const run = await python(FETCH(originPort));
      expect(run.stdout).toBe('200 listed\n');
      expect(run.network_denied).toBeUndefined();
      expect(accepted).toBe(0);
    });
  });
});
