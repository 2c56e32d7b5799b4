// The call shapes agents reach for: language aliases (py, js, ts, sh…), execute_code with a
// session_id (run in that session), and kill_session (end one in the middle of a send).
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { callTool, startServer, type TestServer } from '../helpers/server.js';
import { allGone, processTree, start, waitUntil } from '../sessions/helpers.js';

interface Run {
  success: boolean;
  language: string;
  stdout: string;
  session_id?: string;
  session_alive?: boolean;
  warm: boolean;
  working_dir: string;
}

describe('language aliases and session calls', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startServer();
  });
  afterAll(() => server?.close());

  it('language aliases (py, js, nodejs, ts, sh, shell) run as their language and are reported by its name', async () => {
    const cases: Array<[string, string, string]> = [
      ['py', 'python', 'print(6 * 7)'],
      ['js', 'node', 'console.log(6 * 7)'],
      ['nodejs', 'node', 'console.log(6 * 7)'],
      ['ts', 'typescript', 'const n: number = 6 * 7; console.log(n)'],
      ['sh', 'bash', 'echo $((6 * 7))'],
      ['shell', 'bash', 'echo $((6 * 7))'],
    ];
    for (const [alias, language, code] of cases) {
      const { value } = await callTool<Run>(server.client, 'execute_code', { language: alias, code });
      expect([alias, value.language, value.stdout]).toEqual([alias, language, '42\n']);
    }
    const { tools } = await server.client.listTools();
    const advertised = tools.find((tool) => tool.name === 'execute_code')?.inputSchema.properties
      ?.language as {
      enum: string[];
    };
    expect(advertised.enum).toEqual(
      expect.arrayContaining(['python', 'py', 'js', 'nodejs', 'ts', 'sh', 'shell']),
    );
    const unknown = await callTool(server.client, 'execute_code', { language: 'ruby', code: 'puts 1' });
    expect(unknown.isError).toBe(true);
    const session = await start(server.client, 'py');
    expect((session as unknown as { language: string }).language).toBe('python');
    await callTool(server.client, 'close_session', { session_id: session.session_id });
    const saved = await callTool<{ language: string }>(server.client, 'save_script', {
      name: 'aliased',
      description: 'saved under an alias',
      language: 'js',
      code: 'console.log(1)',
    });
    expect(saved.isError).toBe(false);
    const listed = await callTool<{ scripts: Array<{ name: string; language: string }> }>(
      server.client,
      'list_scripts',
      { language: 'nodejs' },
    );
    expect(listed.value.scripts).toEqual([expect.objectContaining({ name: 'aliased', language: 'node' })]);
  });

  it('execute_code {session_id} runs in that session: state kept, its result the run shape with the session beside it', async () => {
    const session = await start(server.client, 'python');
    const session_id = session.session_id;
    try {
      const first = await callTool<Run>(server.client, 'execute_code', {
        language: 'py',
        code: 'x = 40',
        session_id,
      });
      expect(first.value).toMatchObject({ success: true, session_id, session_alive: true, warm: true });
      const second = await callTool<Run>(server.client, 'execute_code', {
        language: 'python',
        code: 'print(x + 2)',
        session_id,
      });
      expect(second.value.stdout).toBe('42\n');
      expect(second.value.working_dir).toBe(session.working_dir);
      // A send to the same session sees the same state.
      const send = await callTool<Run>(server.client, 'send_to_session', { session_id, code: 'print(x)' });
      expect(send.value.stdout).toBe('40\n');

      const wrongLanguage = await callTool(server.client, 'execute_code', {
        language: 'bash',
        code: 'echo',
        session_id,
      });
      expect([wrongLanguage.isError, wrongLanguage.text]).toEqual([
        true,
        expect.stringContaining('runs python'),
      ]);
      const fixed = await callTool(server.client, 'execute_code', {
        language: 'python',
        code: 'print(1)',
        session_id,
        working_dir: '/tmp',
      });
      expect([fixed.isError, fixed.text]).toEqual([
        true,
        expect.stringContaining('working_dir cannot be given'),
      ]);
    } finally {
      await callTool(server.client, 'close_session', { session_id });
    }
    const gone = await callTool(server.client, 'execute_code', {
      language: 'python',
      code: 'print(1)',
      session_id,
    });
    expect([gone.isError, gone.text]).toEqual([true, expect.stringContaining('SESSION_NOT_FOUND')]);
  });

  it('kill_session ends a session in the middle of a send, with everything it started, logged as killed', async () => {
    const session = await start(server.client, 'python');
    const session_id = session.session_id;
    const tree = processTree(session.pid);
    const started = Date.now();
    const running = callTool<Run & { session_alive: boolean }>(server.client, 'send_to_session', {
      session_id,
      code: 'import time\nopen("sending", "w").close()\ntime.sleep(120)',
      timeout_ms: 120_000,
    });
    // The send is under way once its code has made its mark in the workspace.
    expect(await waitUntil(() => existsSync(join(session.working_dir, 'sending')), 30_000)).toBe(true);
    const killed = await callTool<{ success: boolean; session_id: string }>(server.client, 'kill_session', {
      session_id,
    });
    expect(killed.value).toMatchObject({ success: true, session_id });
    const sent = await running;
    expect(sent.value.session_alive).toBe(false);
    expect(Date.now() - started).toBeLessThan(30_000);
    expect(await allGone(tree)).toBe(true);
    const log = join(server.home, 'logs', `session-${session_id}.jsonl`);
    const ended = () =>
      readFileSync(log, 'utf8')
        .trimEnd()
        .split('\n')
        .map((line) => JSON.parse(line) as { type: string; reason?: string })
        .find((line) => line.type === 'session_end');
    expect(await waitUntil(() => ended() !== undefined, 5000)).toBe(true);
    expect(ended()?.reason).toBe('killed');
    const again = await callTool(server.client, 'kill_session', { session_id });
    expect([again.isError, again.text]).toEqual([true, expect.stringContaining('killed')]);
  });
});
