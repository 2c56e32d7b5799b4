// Real session sends (written by the session manager to session-<id>.jsonl) are searchable.
import { rmSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { callTool, startServer, type TestServer } from '../helpers/server.js';
import { ids, KEEP_ALL, search } from './fixtures.js';

describe('session sends in the execution history', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startServer({ env: KEEP_ALL });
  });
  afterAll(async () => {
    await server.close();
    rmSync(server.home, { recursive: true, force: true });
  });

  it('finds them by session, language, status and text, and returns them in full', async () => {
    const started = await callTool<{ session_id: string }>(server.client, 'start_session', {
      language: 'python',
    });
    expect(started.isError, started.text).toBe(false);
    const session_id = started.value.session_id;
    const send = (code: string) =>
      callTool<{ execution_id: string }>(server.client, 'send_to_session', { session_id, code });
    const first = await send('llama_count = 41');
    const second = await send('print(llama_count + 1)');
    const third = await send('raise KeyError("llama_missing")');
    const oneshot = await callTool<{ execution_id: string }>(server.client, 'execute_code', {
      language: 'python',
      code: 'print("llama outside")',
    });

    const ofSession = await search(server.client, { session_id });
    expect(ofSession.results.map((r) => r.execution_id)).toEqual([
      third.value.execution_id,
      second.value.execution_id,
      first.value.execution_id,
    ]);
    expect(ofSession.results[0]).toMatchObject({ session_id, language: 'python', status: 'failed' });
    expect(ofSession.results[0]?.error_preview).toMatch(/KeyError: 'llama_missing'/);
    expect(await ids(server.client, { query: 'llama' })).toEqual([
      oneshot.value.execution_id,
      third.value.execution_id,
      second.value.execution_id,
      first.value.execution_id,
    ]);
    expect(await ids(server.client, { query: 'llama', session_id, status: 'success' })).toEqual([
      second.value.execution_id,
      first.value.execution_id,
    ]);

    const got = await callTool(server.client, 'get_execution_log', {
      execution_id: second.value.execution_id,
    });
    expect(got.value).toMatchObject({
      execution_id: second.value.execution_id,
      session_id,
      language: 'python',
      code: 'print(llama_count + 1)',
      stdout: '42\n',
      exit_code: 0,
    });
    await callTool(server.client, 'close_session', { session_id });
  });
});
