// A session whose process dies at its sandbox's memory limit ends for that limit, and its send says
// so as a one-shot's result does: `limit: "memory"`, the note on stderr, an error naming the limit.
// Only where runs have cgroups (without, RLIMIT_AS stands in: the code gets a MemoryError and the
// session lives on).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makesCgroups } from '../helpers/sandbox.js';
import { callTool, startServer, type TestServer } from '../helpers/server.js';

describe.runIf(makesCgroups())('a session past its memory limit', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startServer({ env: { CODEXEC_MEMORY_MB: '128' } });
  });
  afterAll(() => server?.close());

  it('ends as limit "memory", said on stderr and in its error', async () => {
    const started = await callTool<{ session_id: string }>(server.client, 'start_session', {
      language: 'python',
    });
    const { value } = await callTool<Record<string, unknown>>(server.client, 'send_to_session', {
      session_id: started.value.session_id,
      // Written, so charged: 400 MB past a 128 MB limit.
      code: 'b = bytes(400 * 1024 * 1024).replace(bytes(1), bytes([1]))\nprint("survived")',
    });
    expect(value).toMatchObject({ success: false, session_alive: false, limit: 'memory', stdout: '' });
    expect(value.error).toMatch(/^memory limit reached \(CODEXEC_MEMORY_MB=128\), so the session was killed/);
    expect(value.stderr).toContain('[codexec: memory limit reached (CODEXEC_MEMORY_MB=128); process killed]');
  }, 60_000);
});
