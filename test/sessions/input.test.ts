// Code that waits for input: a send returns waiting_for_input with the prompt instead of hanging
// to its timeout (seen from /proc, not guessed from the output), and send_to_session {input}
// answers it; write_stdin {session_id} writes to the session's stdin at any time.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { callTool, startServer, type TestServer } from '../helpers/server.js';
import { allGone, processTree, type SendValue, start } from './helpers.js';

interface Waiting extends SendValue {
  waiting_for_input?: true;
  prompt?: string;
  code?: string;
}

describe('sends that wait for input', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startServer({ env: { CODEXEC_MAX_SESSIONS: '20' } });
  });
  afterAll(async () => {
    await server?.close();
  });

  const send = async (session_id: string, args: { code?: string; input?: string }, timeout_ms = 20_000) =>
    (
      await callTool<Waiting>(
        server.client,
        'send_to_session',
        { session_id, timeout_ms, ...args },
        { timeout: 60_000 },
      )
    ).value;

  it('python input(): the send returns the prompt at once, input answers, the cell goes on to its end', async () => {
    const { session_id } = await start(server.client, 'python');
    const started = Date.now();
    const first = await send(session_id, {
      code: 'print("starting")\nname = input("Name? ")\nage = input("Age? ")\nprint(f"hello {name}, {age}")',
    });
    expect(first).toMatchObject({
      waiting_for_input: true,
      prompt: 'Name? ',
      success: true,
      exit_code: null,
    });
    expect(first.stdout).toBe('starting\nName? ');
    expect(Date.now() - started).toBeLessThan(10_000); // not the 20 s timeout
    const second = await send(session_id, { input: 'Ada' });
    expect(second).toMatchObject({ waiting_for_input: true, prompt: 'Age? ' });
    expect(second.stdout).toBe('Age? ');
    expect(second.execution_id).not.toBe(first.execution_id);
    const third = await send(session_id, { input: '36\n' });
    expect(third).toMatchObject({ success: true, exit_code: 0, session_alive: true });
    expect(third.waiting_for_input).toBeUndefined();
    expect(third.stdout).toBe('hello Ada, 36\n');
    // The state is the session's: the answers are variables now.
    expect((await send(session_id, { code: 'name + age' })).stdout).toBe("'Ada36'\n");
    // Each part is an execution in the session's log, the answer as its stdin.
    const lines = readFileSync(join(server.home, 'logs', `session-${session_id}.jsonl`), 'utf8')
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as Record<string, unknown>)
      .filter((entry) => entry.type === 'execution');
    expect(lines.map((entry) => [entry.stdin, entry.waiting_for_input ?? false])).toEqual([
      [null, true],
      ['Ada', true],
      ['36\n', false],
      [null, false],
    ]);
  });

  it('bash read, node readline, and a child process reading the same stdin', async () => {
    const bash = await start(server.client, 'bash');
    const asked = await send(bash.session_id, {
      code: 'printf "Continue? [y/N] "; read answer; echo "got $answer"',
    });
    expect(asked).toMatchObject({ waiting_for_input: true, prompt: 'Continue? [y/N] ' });
    expect((await send(bash.session_id, { input: 'y' })).stdout).toBe('got y\n');
    const child = await send(bash.session_id, { code: 'echo before; head -n 1; echo after' });
    expect(child).toMatchObject({ waiting_for_input: true, prompt: 'before' });
    expect((await send(bash.session_id, { input: 'a line' })).stdout).toBe('a line\nafter\n');

    const node = await start(server.client, 'node');
    const question = await send(node.session_id, {
      code:
        "const readline = await import('node:readline/promises');\n" +
        'const rl = readline.createInterface({ input: process.stdin, output: process.stdout });\n' +
        "const color = await rl.question('Color? ');\nrl.close();\n`color: ${color}`",
    });
    expect(question).toMatchObject({ waiting_for_input: true, prompt: 'Color? ' });
    const answered = await send(node.session_id, { input: 'green' });
    expect(answered).toMatchObject({ success: true });
    expect(answered.stdout).toContain("'color: green'");
  });

  it('select and poll on stdin count as waiting; a quiet sleep does not', async () => {
    const { session_id } = await start(server.client, 'python');
    const quiet = await send(session_id, { code: 'import time\ntime.sleep(1.5)\nprint("slept")' });
    expect(quiet).toMatchObject({ success: true, stdout: 'slept\n' });
    expect(quiet.waiting_for_input).toBeUndefined();
    const selecting = await send(session_id, {
      code: 'import select, sys\nprint("ready?")\nselect.select([sys.stdin], [], [])\nprint(sys.stdin.readline().strip())',
    });
    expect(selecting).toMatchObject({ waiting_for_input: true, prompt: 'ready?' });
    expect((await send(session_id, { input: 'yes' })).stdout).toBe('yes\n');
    const polling = await send(session_id, {
      code: 'p = select.poll()\np.register(sys.stdin, select.POLLIN)\nprint("poll", flush=True)\np.poll()\nsys.stdin.readline()',
    });
    expect(polling).toMatchObject({ waiting_for_input: true, prompt: 'poll' });
    expect((await send(session_id, { input: 'x' })).stdout).toBe("'x\\n'\n");
  });

  it('refuses code while waiting and input while not; list_sessions says which waits; kill_session ends it', async () => {
    const { session_id } = await start(server.client, 'python');
    const notWaiting = await callTool<Waiting>(server.client, 'send_to_session', { session_id, input: 'x' });
    expect(notWaiting.isError).toBe(true);
    expect(notWaiting.value).toMatchObject({ code: 'INVALID_INPUT' });
    expect(JSON.stringify(notWaiting.value)).toContain('not waiting for input');
    const both = await callTool<Waiting>(server.client, 'send_to_session', {
      session_id,
      input: 'x',
      code: '1',
    });
    expect(both.value).toMatchObject({ code: 'INVALID_INPUT' });

    expect(await send(session_id, { code: 'input()' })).toMatchObject({
      waiting_for_input: true,
      prompt: '',
    });
    const refused = await callTool<Waiting>(server.client, 'send_to_session', { session_id, code: '1 + 1' });
    expect(refused.value).toMatchObject({ code: 'INVALID_INPUT' });
    expect(JSON.stringify(refused.value)).toContain('waiting for input');
    const listed = await callTool<{
      sessions: Array<{ session_id: string; pid: number; waiting_for_input: boolean }>;
    }>(server.client, 'list_sessions', {});
    expect(listed.value.sessions.find((s) => s.session_id === session_id)?.waiting_for_input).toBe(true);

    const pids = processTree(listed.value.sessions.find((s) => s.session_id === session_id)?.pid as number);
    expect(pids.length).toBeGreaterThan(0);
    expect((await callTool(server.client, 'kill_session', { session_id })).isError).toBe(false);
    expect(await allGone(pids)).toBe(true);
  });

  it('interrupt: true stops the code that waits (python, bash, node) and the session keeps its state', async () => {
    for (const [language, setup, reader, check] of [
      ['python', 'kept = 7', 'input("Name? ")', 'kept'],
      ['bash', 'kept=7', 'read -r line', 'echo $kept'],
      [
        'node',
        'var kept = 7',
        "await (await import('node:readline/promises')).createInterface({ input: process.stdin }).question('?')",
        'kept',
      ],
    ] as const) {
      const { session_id } = await start(server.client, language);
      await send(session_id, { code: setup });
      expect(await send(session_id, { code: reader }), language).toMatchObject({ waiting_for_input: true });
      const stopped = await callTool<Waiting>(server.client, 'send_to_session', {
        session_id,
        interrupt: true,
      });
      expect(stopped.value, language).toMatchObject({ cancelled: true, session_alive: true });
      expect(stopped.value.waiting_for_input, language).toBeUndefined();
      expect((await send(session_id, { code: check })).stdout, language).toBe('7\n');
    }
  });

  it('write_stdin {session_id} feeds the stdin ahead of the read, and eof closes it for good', async () => {
    const { session_id } = await start(server.client, 'python');
    const wrote = await callTool(server.client, 'write_stdin', { session_id, data: '42\n' });
    expect(wrote.value).toMatchObject({ session_id, bytes_written: 3 });
    const read = await send(session_id, { code: 'int(input()) + 1' });
    expect(read).toMatchObject({ success: true, stdout: '43\n' });
    await callTool(server.client, 'write_stdin', { session_id, data: 'last\n', eof: true });
    expect((await send(session_id, { code: 'import sys\nsys.stdin.read()' })).stdout).toBe("'last\\n'\n");
    const closed = await callTool(server.client, 'write_stdin', { session_id, data: 'more' });
    expect(closed.value).toMatchObject({ code: 'INVALID_INPUT' });
  });
});
