// run_script runs where the agent put its data: execute_command's workspace (workspace:
// "command") or a session (session_id, as a send: its workspace and state). A working_dir that
// names one of codexec's own workspaces is refused with the argument that reaches it.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { callTool, startServer, type TestServer } from '../helpers/server.js';

interface Ran {
  success: boolean;
  stdout: string;
  stderr: string;
  session_id?: string;
  code?: string;
  error?: string;
}

describe('run_script in a workspace the agent chose', () => {
  let server: TestServer;
  const call = <T = Ran>(name: string, args: Record<string, unknown>) =>
    callTool<T>(server.client, name, args);

  beforeAll(async () => {
    server = await startServer();
    const code =
      'import sys\ntotal = sum(int(x) for x in open("data.txt").read().split())\nprint(total, *sys.argv[1:])';
    const saved = await call('save_script', {
      name: 'sum-data',
      description: 'sums data.txt',
      language: 'python',
      code,
    });
    expect(saved.isError, saved.text).toBe(false);
  });
  afterAll(() => server.close());

  it("runs in execute_command's workspace, with its args", async () => {
    await call('write_file', { workspace: 'command', path: 'data.txt', content: '1 2 3\n' });
    const ran = await call<{ execution_id: string }>('run_script', {
      name: 'sum-data',
      workspace: 'command',
      args: ['items'],
    });
    expect(ran.value).toMatchObject({ success: true, stdout: '6 items\n' });
    // The log finds it by the script's name, and by its words.
    for (const filters of [{ script_name: 'sum-data' }, { query: 'sum-data' }]) {
      const found = await call<{ results: { execution_id: string; script_name: string }[] }>(
        'search_execution_logs',
        filters,
      );
      expect(found.value.results, JSON.stringify(filters)).toContainEqual(
        expect.objectContaining({ execution_id: ran.value.execution_id, script_name: 'sum-data' }),
      );
    }
  });

  it("runs in a session, as a send: the session's files and state", async () => {
    const started = await call<{ session_id: string }>('start_session', { language: 'python' });
    const id = started.value.session_id;
    try {
      await call('write_file', { session_id: id, path: 'data.txt', content: '10 20\n' });
      const ran = await call('run_script', { name: 'sum-data', session_id: id });
      expect(ran.value).toMatchObject({ success: true, stdout: '30\n', session_id: id });
      const after = await call('send_to_session', { session_id: id, code: 'total * 2' });
      expect(after.value).toMatchObject({ success: true, stdout: '60\n' });
      const withArgs = await call('run_script', { name: 'sum-data', session_id: id, args: ['x'] });
      expect(withArgs.value.code).toBe('INVALID_INPUT');
      const narrower = await call('run_script', {
        name: 'sum-data',
        session_id: id,
        allowed_domains: ['a.test'],
      });
      expect(narrower.value.code).toBe('INVALID_INPUT');
      expect(narrower.value.error).toContain('set by start_session');
      const twoPlaces = await call('run_script', { name: 'sum-data', session_id: id, workspace: 'command' });
      expect(twoPlaces.value.code).toBe('INVALID_INPUT');
    } finally {
      await call('close_session', { session_id: id });
    }
    const bash = await call<{ session_id: string }>('start_session', { language: 'bash' });
    const wrong = await call('run_script', { name: 'sum-data', session_id: bash.value.session_id });
    expect(wrong.value).toMatchObject({ code: 'INVALID_INPUT' });
    expect(wrong.value.error).toContain('runs bash');
    await call('close_session', { session_id: bash.value.session_id });
  });

  it("refuses a working_dir in a session's or execute_command's workspace, naming the argument that reaches it", async () => {
    const started = await call<{ session_id: string; working_dir: string }>('start_session', {
      language: 'python',
    });
    const { session_id, working_dir } = started.value;
    try {
      for (const tool of ['run_script', 'execute_code']) {
        const args = tool === 'run_script' ? { name: 'sum-data' } : { language: 'python', code: 'print(1)' };
        const refused = await call(tool, { ...args, working_dir });
        expect(refused.value.code).toBe('FORBIDDEN_PATH');
        expect(refused.value.error).toContain(`run there with session_id: "${session_id}"`);
      }
      const command = await call<{ work_dir: string }>('execute_command', { command: 'true' });
      const inCommand = await call('run_script', { name: 'sum-data', working_dir: command.value.work_dir });
      expect(inCommand.value.error).toContain('workspace: "command"');
    } finally {
      await call('close_session', { session_id });
    }
  });
});
