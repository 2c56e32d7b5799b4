// read_file {execution_id, path}: the files a one-shot run left, read after it ended, from its own
// workspace (kept while it holds files), execute_command's workspace or its host directory, by
// the same confined walk as a workspace read: no link followed, nothing outside reached.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { callTool, startServer, type TestServer } from '../helpers/server.js';

interface Read {
  success: boolean;
  content: string;
  code?: string;
  error?: string;
}

describe('read_file {execution_id, path}', () => {
  let server: TestServer;
  const run = (code: string) =>
    callTool<{ execution_id: string; working_dir: string; artifacts: string[] }>(
      server.client,
      'execute_code',
      {
        language: 'python',
        code,
      },
    );
  const read = (args: Record<string, unknown>) => callTool<Read>(server.client, 'read_file', args);

  beforeAll(async () => {
    server = await startServer();
  });
  afterAll(() => server.close());

  it('reads a file a one-shot run wrote, after the run, and a file named stdout when no output was kept', async () => {
    const ran = await run(
      'import os\nos.makedirs("out", exist_ok=True)\nopen("out/data.csv", "w").write("a,b\\n1,2\\n")\nopen("stdout", "w").write("a file")',
    );
    expect(ran.value.artifacts.sort()).toEqual(['out/data.csv', 'stdout']);
    const got = await read({ execution_id: ran.value.execution_id, path: 'out/data.csv' });
    expect(got.value).toMatchObject({ success: true, content: 'a,b\n1,2\n' });
    expect(got.text.endsWith('\na,b\n1,2\n')).toBe(true);
    const named = await read({ execution_id: ran.value.execution_id, path: 'stdout' });
    expect(named.value).toMatchObject({ success: true, content: 'a file' });
  });

  it('refuses a link the run left, to a file outside or inside, and a path out of the workspace', async () => {
    const ran = await run(
      'import os\nopen("real.txt", "w").write("inside")\nos.symlink("/etc/hostname", "out.txt")\nos.symlink("real.txt", "alias.txt")',
    );
    const id = ran.value.execution_id;
    for (const path of ['out.txt', 'alias.txt']) {
      const refused = await read({ execution_id: id, path });
      expect(refused.isError, path).toBe(true);
      expect(refused.value.content).toBeUndefined();
    }
    const escaped = await read({ execution_id: id, path: '../../../etc/hostname' });
    expect(escaped.isError).toBe(true);
    expect((await read({ execution_id: id, path: 'real.txt' })).value.content).toBe('inside');
    // A path that ends as a directory's names no file (nor gets round the names stdout and stderr).
    for (const path of ['real.txt/', 'real.txt/.', 'stdout/']) {
      const refused = await read({ execution_id: id, path });
      expect([refused.value.code, refused.value.error], path).toEqual([
        'INVALID_INPUT',
        `"${path}" names a directory; read_file reads a file`,
      ]);
    }
  });

  it('says a run kept no files when it left none', async () => {
    const ran = await run('print("nothing written")');
    const refused = await read({ execution_id: ran.value.execution_id, path: 'x.txt' });
    expect(refused.value.code).toBe('NOT_FOUND');
    expect(refused.value.error).toMatch(/kept no files: .*CODEXEC_WORKSPACE_RETENTION_HOURS/);
  });

  it('reads a file an execute_command run made, from the command workspace', async () => {
    const made = await callTool<{ execution_id: string }>(server.client, 'execute_command', {
      command: 'mkdir -p sub && echo made > sub/n.txt',
    });
    const inside = await callTool<{ execution_id: string }>(server.client, 'execute_command', {
      command: 'echo inner > here.txt',
      work_dir: 'sub',
    });
    expect((await read({ execution_id: made.value.execution_id, path: 'sub/n.txt' })).value.content).toBe(
      'made\n',
    );
    expect((await read({ execution_id: inside.value.execution_id, path: 'here.txt' })).value.content).toBe(
      'inner\n',
    );
  });

  it("reads a send's file from its live session's workspace; an ended session's are gone", async () => {
    const started = await callTool<{ session_id: string }>(server.client, 'start_session', {
      language: 'python',
    });
    const id = started.value.session_id;
    const sent = await callTool<{ execution_id: string }>(server.client, 'send_to_session', {
      session_id: id,
      code: 'open("note.txt", "w").write("from the session")',
    });
    const later = await callTool(server.client, 'send_to_session', { session_id: id, code: 'x = 1' });
    expect(later.isError).toBe(false);
    // Any file of the session's workspace, through any of its sends.
    const got = await read({ execution_id: sent.value.execution_id, path: 'note.txt' });
    expect(got.value.content).toBe('from the session');
    await callTool(server.client, 'close_session', { session_id: id });
    const ended = await read({ execution_id: sent.value.execution_id, path: 'note.txt' });
    expect(ended.value.code).toBe('NOT_FOUND');
    expect(ended.value.error).toContain('which has ended');
  });

  it('pages only kept output: offset on a run that kept none says so', async () => {
    const ran = await run('print("short")');
    const paged = await read({ execution_id: ran.value.execution_id, path: 'stdout', offset: 0 });
    expect(paged.value.code).toBe('NOT_FOUND');
    expect(paged.value.error).toContain('kept no stdout');
  });

  it('refuses an unknown id, and execution_id beside a workspace', async () => {
    const unknown = await read({ execution_id: 'exec_000000000000', path: 'a.txt' });
    expect(unknown.value.code).toBe('NOT_FOUND');
    const ran = await run('open("a.txt", "w").write("x")');
    const both = await read({ execution_id: ran.value.execution_id, workspace: 'command', path: 'a.txt' });
    expect(both.value.code).toBe('INVALID_INPUT');
  });
});
