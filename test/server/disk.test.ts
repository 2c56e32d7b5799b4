// Disk bounds: a workspace past CODEXEC_MAX_WORKSPACE_MB has its run or session
// killed with limit "disk"; a principal whose workspaces hold CODEXEC_MAX_PRINCIPAL_DISK_MB is
// refused new runs and sessions (LIMIT_REACHED). Real server, real bubblewrap, real files.
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Client } from '@modelcontextprotocol/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectHttp, startHttp } from '../helpers/http.js';
import { callTool, startServer, type TestServer, tempDir } from '../helpers/server.js';

interface Result {
  success: boolean;
  stdout: string;
  stderr: string;
  limit?: string;
  duration_ms: number;
  artifacts: string[];
  session_alive?: boolean;
  error?: string;
  code?: string;
  session_id?: string;
}

/** Writes `mb` MB into `name`, one MB every `pause` seconds. */
const write = (name: string, mb: number, pause = 0) =>
  `import time\nwith open(${JSON.stringify(name)}, "wb") as f:\n    for _ in range(${mb}):\n        f.write(b"x" * 1048576)\n        f.flush()\n        time.sleep(${pause})\nprint("wrote")`;

describe('disk bounds', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startServer({
      env: { CODEXEC_MAX_WORKSPACE_MB: '20', CODEXEC_MAX_PRINCIPAL_DISK_MB: '60', CODEXEC_POOL_SIZE: '1' },
    });
  });
  afterAll(() => server.close());
  const run = (code: string) => callTool<Result>(server.client, 'execute_code', { language: 'python', code });

  it('kills a session whose workspace grows past the bound, and says why', async () => {
    const started = await callTool<Result>(server.client, 'start_session', { language: 'python' });
    const sessionId = started.value.session_id as string;
    const { value } = await callTool<Result>(server.client, 'send_to_session', {
      session_id: sessionId,
      code: write('grow.bin', 60, 0.1),
    });
    expect(value).toMatchObject({ success: false, session_alive: false, limit: 'disk' });
    expect(value.error).toContain('CODEXEC_MAX_WORKSPACE_MB=20');
  });

  it('kills a run writing 50 MB into a 20 MB workspace, with limit disk naming the setting', async () => {
    const { value } = await run(write('big.bin', 50, 0.05));
    expect(value.success).toBe(false);
    expect(value.limit).toBe('disk');
    expect(value.stdout).toBe('');
    expect(value.stderr).toContain('CODEXEC_MAX_WORKSPACE_MB=20');
    expect(value.stderr).toContain('process killed');
    expect(value.duration_ms).toBeLessThan(2000); // 50 MB at this pace take 2.5 s
  });

  it('reports a run that wrote past the workspace bound before the first sample', async () => {
    const { value } = await run(write('fast.bin', 24));
    expect(value.limit).toBe('disk');
    expect(value.stderr).toContain('CODEXEC_MAX_WORKSPACE_MB=20');
  });

  it('refuses new runs and sessions of a principal whose workspaces fill its quota', async () => {
    // ~21 + 24 MB kept so far by the runs above (the session's went with it); 18 MB more pass 60.
    const last = await run(write('more.bin', 18));
    expect(last.value.limit).toBe('disk');
    expect(last.value.stderr).toContain('CODEXEC_MAX_PRINCIPAL_DISK_MB=60');
    const refused = await run('print(1)');
    expect(refused.isError).toBe(true);
    expect(refused.value.code).toBe('LIMIT_REACHED');
    expect(refused.value.error).toContain('CODEXEC_MAX_PRINCIPAL_DISK_MB=60');
    const session = await callTool<Result>(server.client, 'start_session', { language: 'bash' });
    expect(session.isError).toBe(true);
    expect(session.value.code).toBe('LIMIT_REACHED');
  });
});

describe('disk bounds across a restart', () => {
  it('counts the workspaces an earlier server kept for the principal that ran them', async () => {
    const home = tempDir('codexec-disk-restart-');
    const env = {
      CODEXEC_MAX_WORKSPACE_MB: '20',
      CODEXEC_MAX_PRINCIPAL_DISK_MB: '30',
      CODEXEC_POOL_SIZE: '0',
    };
    try {
      const first = await startServer({ home, env });
      const run = (server: TestServer, code: string) =>
        callTool<Result>(server.client, 'execute_code', { language: 'python', code });
      expect((await run(first, write('a.bin', 18))).value.limit).toBeUndefined();
      expect((await run(first, write('b.bin', 18))).value.limit).toBe('disk');
      await first.close();
      const second = await startServer({ home, env });
      try {
        // Its first sweep, 5 s after start-up, finds the kept workspaces and their principal: until
        // then a run may still go through; from then on every one is refused.
        const deadline = Date.now() + 30_000;
        let refused = await run(second, 'print(1)');
        while (refused.value.code !== 'LIMIT_REACHED' && Date.now() < deadline) {
          await sleep(250); // the poll's interval
          refused = await run(second, 'print(1)');
        }
        expect(refused.value.code).toBe('LIMIT_REACHED');
        expect(refused.value.error).toContain('CODEXEC_MAX_PRINCIPAL_DISK_MB=30');
      } finally {
        await second.close();
      }
    } finally {
      rmSync(home, { recursive: true, force: true });
    }
  });
});

describe('disk bounds per principal over HTTP', () => {
  it("one principal at its quota is refused; another's runs go on", async () => {
    const home = tempDir('codexec-disk-http-');
    const tokens = join(home, 'tokens.json');
    const ALICE = 'alice-token-0123456789abcdef';
    const BOB = 'bob-token-0123456789abcdef00';
    writeFileSync(tokens, JSON.stringify({ alice: ALICE, bob: BOB }));
    const server = await startHttp({
      home,
      env: { CODEXEC_HTTP_TOKENS: tokens, CODEXEC_MAX_PRINCIPAL_DISK_MB: '10', CODEXEC_POOL_SIZE: '0' },
    });
    try {
      const alice = await connectHttp(server.url, ALICE, 'legacy');
      const bob = await connectHttp(server.url, BOB, 'legacy');
      const run = (client: Client, code: string) =>
        callTool<Result>(client, 'execute_code', { language: 'python', code });
      expect((await run(alice, write('a.bin', 12))).value.stderr).toContain(
        'CODEXEC_MAX_PRINCIPAL_DISK_MB=10',
      );
      const refused = await run(alice, 'print(1)');
      expect(refused.value.code).toBe('LIMIT_REACHED');
      expect(refused.value.error).toContain('principal "alice"');
      expect((await run(bob, 'print(2)')).value).toMatchObject({ success: true, stdout: '2\n' });
      await Promise.all([alice.close(), bob.close()]);
    } finally {
      await server.stop();
      rmSync(home, { recursive: true, force: true });
    }
  });
});
