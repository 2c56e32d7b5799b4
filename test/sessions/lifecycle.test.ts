// Session lifecycle through the real MCP server: limit, idle kill, server exit, logs, listing.
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SANDBOX_MODE } from '../helpers/mode.js';
import { callTool, ERAS, startServer, type TestServer, tempDir } from '../helpers/server.js';
import { allGone, processTree, send, start, waitUntil } from './helpers.js';

const LANGUAGES = ['python', 'node', 'typescript', 'bash'] as const;

interface Listed {
  sessions: Array<{
    session_id: string;
    language: string;
    name: string | null;
    pid: number;
    memory_mb: number | null;
    executions_count: number;
    started_at: string;
    last_activity_at: string;
    packages_installed: string[];
  }>;
}

const readLog = (home: string, id: string) =>
  readFileSync(join(home, 'logs', `session-${id}.jsonl`), 'utf8')
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as Record<string, unknown>);

describe('session limits and listing', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startServer({
      env: {
        CODEXEC_MAX_SESSIONS: '2',
        CODEXEC_MAX_OUTPUT_CHARS: '1000',
        CODEXEC_TRUNCATION_HEAD: '300',
        CODEXEC_TRUNCATION_TAIL: '300',
      },
    });
  });
  afterAll(() => server.close());

  it('refuses a session beyond CODEXEC_MAX_SESSIONS with LIMIT_REACHED, and allows one after a close', async () => {
    const a = await start(server.client, 'python', { name: 'first' });
    const b = await start(server.client, 'bash');
    const refused = await callTool(server.client, 'start_session', { language: 'node' });
    expect(refused.isError).toBe(true);
    expect(refused.value).toMatchObject({ success: false, code: 'LIMIT_REACHED' });
    expect(String(refused.value.error)).toMatch(/CODEXEC_MAX_SESSIONS/);
    await callTool(server.client, 'close_session', { session_id: b.session_id });
    const c = await start(server.client, 'node');
    await callTool(server.client, 'close_session', { session_id: c.session_id });
    await callTool(server.client, 'close_session', { session_id: a.session_id });
  });

  it('lists sessions with pid, real memory, counts and timestamps', async () => {
    const session = await start(server.client, 'python', { name: 'analysis' });
    await send(server.client, session.session_id, "data = b'x' * (30 * 1024 * 1024)");
    const { value } = await callTool<Listed>(server.client, 'list_sessions', {});
    const listed = value.sessions.find((s) => s.session_id === session.session_id);
    expect(listed).toMatchObject({
      language: 'python',
      name: 'analysis',
      pid: session.pid,
      executions_count: 1,
      packages_installed: [],
    });
    expect(listed?.memory_mb).toBeGreaterThan(30);
    expect(Date.parse(listed?.last_activity_at ?? '')).toBeGreaterThanOrEqual(
      Date.parse(listed?.started_at ?? ''),
    );
    await callTool(server.client, 'close_session', { session_id: session.session_id });
  });

  it('reports artifacts per send and truncates output like one-shot runs', async () => {
    const session = await start(server.client, 'python');
    const wrote = await send(server.client, session.session_id, "open('a.txt', 'w').write('x')");
    expect(wrote.value.artifacts).toEqual(['a.txt']);
    const again = await send(server.client, session.session_id, "open('b.txt', 'w').write('y')");
    expect(again.value.artifacts).toEqual(['b.txt']);
    const big = await send(server.client, session.session_id, "print('z' * 5000)");
    expect(big.value.truncated).toBe(true);
    expect(big.value.stdout).toMatch(/\[\.\.\. truncated \d+ characters \.\.\.\]/);
    // Reading stdin waits for input (test/sessions/input.test.ts): the send says so at once.
    const stdin = await send(server.client, session.session_id, 'import sys\nsys.stdin.read()');
    expect(stdin.value).toMatchObject({ success: true, waiting_for_input: true, session_alive: true });
    await callTool(server.client, 'close_session', { session_id: session.session_id });
  });

  it('answers SESSION_NOT_FOUND for an unknown session', async () => {
    for (const [tool, args] of [
      ['send_to_session', { session_id: 'sess_000000000000', code: '1' }],
      ['close_session', { session_id: 'sess_nope' }],
    ] as const) {
      const { isError, value } = await callTool(server.client, tool, args);
      expect(isError).toBe(true);
      expect(value).toMatchObject({ success: false, code: 'SESSION_NOT_FOUND' });
    }
  });

  it('makes session executions findable by the execution-log search, with their session_id', async () => {
    const session = await start(server.client, 'python');
    const sent = await send(server.client, session.session_id, 'okapi_marker = 1');
    const found = await callTool<{ results: Array<{ execution_id: string; session_id: string | null }> }>(
      server.client,
      'search_execution_logs',
      { query: 'okapi_marker' },
    );
    expect(found.value.results).toContainEqual(
      expect.objectContaining({ execution_id: sent.value.execution_id, session_id: session.session_id }),
    );
    await callTool(server.client, 'close_session', { session_id: session.session_id });
  });

  it('writes session_start, execution and session_end lines in the seed format', async () => {
    const session = await start(server.client, 'bash', { name: 'logged' });
    await send(server.client, session.session_id, 'echo hi');
    await callTool(server.client, 'close_session', { session_id: session.session_id });
    // The reply does not wait for the disk: the lines land in order, shortly.
    await expect
      .poll(() => readLog(server.home, session.session_id).map((line) => line.type))
      .toEqual(['session_start', 'execution', 'session_end']);
    const lines = readLog(server.home, session.session_id);
    expect(lines[0]).toMatchObject({ session_id: session.session_id, language: 'bash', name: 'logged' });
    expect(lines[1]).toMatchObject({
      session_id: session.session_id,
      code: 'echo hi',
      stdout: 'hi\n',
      stderr: '',
      exit_code: 0,
      duration_ms: expect.any(Number),
      at: expect.any(String),
    });
    expect(lines[1]?.execution_id).toMatch(/^exec_/);
    expect(lines[2]).toMatchObject({
      reason: 'closed',
      executions_count: 1,
      total_duration_ms: expect.any(Number),
    });
  });
});

describe('idle sessions', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startServer({ env: { CODEXEC_SESSION_IDLE_TIMEOUT_MS: '1000' } });
  });
  afterAll(() => server.close());

  it('kills every language after the idle timeout and removes the session', async () => {
    const sessions = await Promise.all(LANGUAGES.map((language) => start(server.client, language)));
    await Promise.all(sessions.map((s, i) => send(server.client, s.session_id, i === 3 ? 'true' : '1')));
    const trees = sessions.flatMap((s) => processTree(s.pid));
    expect(await allGone(trees)).toBe(true);
    const { value } = await callTool<Listed>(server.client, 'list_sessions', {});
    expect(value.sessions).toEqual([]);
    for (const session of sessions) {
      const late = await send(server.client, session.session_id, '1');
      expect(late.value).toMatchObject({ success: false, code: 'SESSION_NOT_FOUND' });
      expect(String((late.value as unknown as { error: string }).error)).toMatch(/idle_timeout/);
      await waitUntil(() => readLog(server.home, session.session_id).at(-1)?.type === 'session_end', 5000);
      expect(readLog(server.home, session.session_id).at(-1)).toMatchObject({ reason: 'idle_timeout' });
      expect(existsSync(session.working_dir)).toBe(false);
    }
  });
});

describe.each(['stdin closed', 'SIGTERM', 'SIGINT'])('server exit (%s)', (how) => {
  it('kills every session process and logs server_shutdown', async () => {
    const home = tempDir();
    const server = await startServer({ home });
    const sessions = await Promise.all(LANGUAGES.map((language) => start(server.client, language)));
    const trees = sessions.flatMap((s) => processTree(s.pid));
    expect(trees.length).toBeGreaterThanOrEqual(4);
    if (how !== 'stdin closed') process.kill(server.pid, how as NodeJS.Signals);
    await server.close().catch(() => {});
    expect(await allGone([...trees, server.pid])).toBe(true);
    for (const session of sessions) {
      expect(readLog(home, session.session_id).at(-1)).toMatchObject({
        type: 'session_end',
        reason: 'server_shutdown',
      });
      expect(existsSync(session.working_dir)).toBe(false);
    }
    rmSync(home, { recursive: true, force: true });
  });
});

describe.each([SANDBOX_MODE, 'subprocess'])('server killed with SIGKILL (sandbox mode %s)', (mode) => {
  it('leaves no idle driver behind: each exits when its control channel closes', async () => {
    const server = await startServer({ env: { CODEXEC_SANDBOX_MODE: mode } });
    const sessions = await Promise.all(LANGUAGES.map((language) => start(server.client, language)));
    const trees = sessions.flatMap((s) => processTree(s.pid));
    process.kill(server.pid, 'SIGKILL');
    await server.close().catch(() => {});
    expect(await allGone(trees)).toBe(true);
  });
});

describe.each(ERAS)('sessions in the %s protocol era', (era) => {
  it('start, send, list and close', async () => {
    const server = await startServer({ era });
    try {
      const session = await start(server.client, 'python');
      expect((await send(server.client, session.session_id, '6 * 7')).value.stdout).toBe('42\n');
      const closed = await callTool(server.client, 'close_session', { session_id: session.session_id });
      expect(closed.value).toMatchObject({ success: true, executions_count: 1 });
    } finally {
      await server.close();
    }
  });
});

describe('global packages', () => {
  it('are importable in python and node sessions, as in one-shot runs', async () => {
    const home = tempDir();
    mkdirSync(join(home, 'envs', 'python'), { recursive: true });
    writeFileSync(join(home, 'envs', 'python', 'codexec_probe.py'), 'VALUE = 41\n');
    const pkg = join(home, 'envs', 'node', 'node_modules', 'codexec-probe');
    mkdirSync(pkg, { recursive: true });
    writeFileSync(join(pkg, 'package.json'), '{"name":"codexec-probe","main":"index.js"}');
    writeFileSync(join(pkg, 'index.js'), 'module.exports = { value: 41 };');
    const server = await startServer({ home });
    try {
      const py = await start(server.client, 'python');
      expect(
        (await send(server.client, py.session_id, 'import codexec_probe\ncodexec_probe.VALUE + 1')).value
          .stdout,
      ).toBe('42\n');
      const js = await start(server.client, 'node');
      const imported = await send(
        server.client,
        js.session_id,
        "import probe from 'codexec-probe'\nprobe.value + 1",
      );
      expect(imported.value.stdout).toBe('42\n');
      expect((await send(server.client, js.session_id, "require('codexec-probe').value")).value.stdout).toBe(
        '41\n',
      );
    } finally {
      await server.close();
      rmSync(home, { recursive: true, force: true });
    }
  });
});
