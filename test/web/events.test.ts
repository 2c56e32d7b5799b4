// The dashboard's /api/events (Server-Sent Events) read as the page reads them, without a browser:
// a run made as an MCP Task (2026 era) streams into its principal's feed while it runs, and
// another principal's stream hears nothing of it. Sessions are killed through /api too.
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectHttp, type HttpServer, startHttp } from '../helpers/http.js';
import { callTool, tempDir } from '../helpers/server.js';
import { overHttp, pollUntilDone } from '../helpers/tasks.js';

const ALICE = 'alice-token-0123456789';
const BOB = 'bob-token-0123456789ab';

/** Everything an /api/events stream sends, as it arrives, until stop(). */
function listen(base: string, token: string) {
  const controller = new AbortController();
  let text = '';
  const done = fetch(new URL('/api/events', base), {
    headers: { authorization: `Bearer ${token}` },
    signal: controller.signal,
  })
    .then(async (response) => {
      expect(response.headers.get('content-type')).toBe('text/event-stream');
      const decoder = new TextDecoder();
      for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
        text += decoder.decode(chunk, { stream: true });
      }
    })
    .catch(() => {}); // aborted by stop()
  return {
    text: () => text,
    /** The `output` events' text, in order (a run event carries the code, which names both lines). */
    output: () =>
      [...text.matchAll(/^event: output\ndata: (.*)$/gm)]
        .map((match) => (JSON.parse(match[1] ?? '{}') as { text: string }).text)
        .join(''),
    async stop() {
      controller.abort();
      await done;
    },
  };
}

describe('serve --http: /api/events', () => {
  let dir: string;
  let server: HttpServer;
  let base: string;

  beforeAll(async () => {
    dir = tempDir();
    const tokens = join(dir, 'tokens.json');
    writeFileSync(tokens, JSON.stringify({ alice: ALICE, bob: BOB }));
    server = await startHttp({ env: { CODEXEC_HTTP_TOKENS: tokens } });
    base = new URL('/', server.url).href;
  });
  afterAll(async () => {
    await server?.stop();
    rmSync(dir, { recursive: true, force: true });
    if (server) rmSync(server.home, { recursive: true, force: true });
  });

  it("streams a task's output to its principal while it runs, and nothing to another", async () => {
    const alice = listen(base, ALICE);
    const bob = listen(base, BOB);
    await expect.poll(() => alice.text() + bob.text()).toMatch(/snapshot[\s\S]*snapshot/);
    const call = overHttp(server.url, ALICE);
    const created = await call('tools/call', {
      name: 'execute_code',
      arguments: { language: 'bash', code: 'echo task-first-4e2; sleep 2; echo task-last-8a1' },
    });
    expect(created.result).toMatchObject({ resultType: 'task' });
    await expect.poll(() => alice.output(), { timeout: 10_000 }).toContain('task-first-4e2');
    expect(alice.output()).not.toContain('task-last-8a1'); // the run still sleeps
    await pollUntilDone(call, created.result?.taskId as string);
    await expect.poll(() => alice.output()).toBe('task-first-4e2\ntask-last-8a1\n');

    await expect.poll(() => alice.text()).toMatch(/"status":"done"/);
    await Promise.all([alice.stop(), bob.stop()]);
    expect(bob.text()).toBe('event: snapshot\ndata: {"runs":[],"approvals":[]}\n\n');
  }, 30_000);

  it('kills a session through the API, for its principal only', async () => {
    const client = await connectHttp(server.url, ALICE, 'legacy');
    const started = await callTool<{ session_id: string }>(client, 'start_session', { language: 'bash' });
    const id = started.value.session_id;
    const kill = (token: string) =>
      fetch(new URL(`/api/sessions/${id}/kill`, base), {
        method: 'POST',
        headers: { authorization: `Bearer ${token}` },
      });
    const asBob = await kill(BOB);
    expect(asBob.status).toBe(404);
    expect(await asBob.json()).toMatchObject({ error: { code: 'SESSION_NOT_FOUND' } });
    const asAlice = await kill(ALICE);
    expect(asAlice.status).toBe(200);
    expect(await asAlice.json()).toMatchObject({ success: true, session_id: id });
    const listed = await fetch(new URL('/api/sessions', base), {
      headers: { authorization: `Bearer ${ALICE}` },
    });
    expect(await listed.json()).toEqual({ sessions: [] });
    await client.close();
  }, 30_000);
});
