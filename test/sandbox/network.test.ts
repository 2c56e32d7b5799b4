import { createServer } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isSandboxUid, SANDBOX_ENV, SANDBOX_MODE } from '../helpers/mode.js';
import { callTool, startServer, type TestServer } from '../helpers/server.js';

// CODEXEC_NETWORK=host is the explicit opt-out: the code shares the host's network namespace.
// (The default, none, is proven unreachable by the hostile suite.)
describe(`${SANDBOX_MODE} mode with CODEXEC_NETWORK=host`, () => {
  let server: TestServer;
  const listener = createServer((socket) => socket.end('hi\n'));
  let port = 0;

  beforeAll(async () => {
    await new Promise<void>((resolve) => listener.listen(0, '127.0.0.1', resolve));
    const address = listener.address();
    port = typeof address === 'object' && address ? address.port : 0;
    server = await startServer({ env: { ...SANDBOX_ENV, CODEXEC_NETWORK: 'host' } });
  });
  afterAll(async () => {
    await server.close();
    listener.close();
  });

  it('reaches a host loopback service and still runs confined', async () => {
    const { value } = await callTool<{ stdout: string }>(server.client, 'execute_code', {
      language: 'python',
      code: `import os, socket\ns = socket.create_connection(("127.0.0.1", ${port}), timeout=2)\ntry:\n    os.listdir("/root")\n    root = True\nexcept OSError:\n    root = False\nprint(s.recv(10).decode().strip(), os.getuid(), root)`,
    });
    // The sandbox uid (isSandboxUid); /root is not there (namespace) or not readable (landlock).
    expect(value).toMatchObject({ success: true, sandbox_mode: SANDBOX_MODE });
    const [greeting, uid, root] = value.stdout.trim().split(' ');
    expect([greeting, isSandboxUid(Number(uid)), root]).toEqual(['hi', true, 'False']);
  });
});
