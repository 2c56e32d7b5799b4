// REPL behaviour of every session language, through the real MCP server over stdio.
import { existsSync, readFileSync, realpathSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { allowing, ownedDir } from '../helpers/host-dir.js';
import { SANDBOX_MODE } from '../helpers/mode.js';
import { callTool, startServer, type TestServer } from '../helpers/server.js';
import { allGone, processTree, send, start, waitUntil } from './helpers.js';

interface Cases {
  /** Three sends building state; the third prints 15. */
  readonly state: readonly [string, string, string];
  /** A trailing expression and how it is displayed. */
  readonly display: readonly [string, string];
  readonly error: readonly [string, RegExp];
  /** Prints the state built by `state` (15). */
  readonly show: string;
  readonly loop: string;
  /** A loop that ignores SIGINT, so the driver must be killed. */
  readonly stubborn: string;
  /** Sent before `stubborn`, untimed: what makes it ignore an interrupt from its first moment. */
  readonly stubbornSetup?: string;
  readonly hardExit: string;
  readonly zero: string;
  /** Reads n, yields, writes n + 1: racy unless sends are serialized. */
  readonly increment: string;
}

// JavaScript cannot ignore SIGINT (the driver breaks a cell on it), but a blocking system call
// can: open(2) of a FIFO with no writer waits, restarted after the driver's signal handler. Made
// by an earlier send, so the timed one is stubborn from its first statement. (It used to spawn a
// bash that trapped INT: an interrupt landing before that bash had set its trap — 30 ms here, more
// on a busy machine — ended it, and the session, correctly interrupted, stayed alive.)
const MAKE_FIFO = "require('child_process').execFileSync('mkfifo', ['stubborn.fifo'])";
const OPEN_FIFO = "require('fs').openSync('stubborn.fifo', 'r')";

const CASES: Record<string, Cases> = {
  python: {
    state: ['n = 10', 'n += 5', 'print(n)'],
    display: ['[1, 2] + [3]', '[1, 2, 3]\n'],
    error: ['1/0', /ZeroDivisionError/],
    show: 'print(n)',
    loop: 'import time\nwhile True:\n    time.sleep(0.01)',
    stubborn: 'import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\nwhile True:\n    pass',
    hardExit: 'import os\nos._exit(3)',
    zero: 'n = 0',
    increment: 'import time\nv = n\ntime.sleep(0.02)\nn = v + 1',
  },
  node: {
    state: ['let n = 10', 'n += 5;', 'console.log(n)'],
    display: ['[1, 2].concat([3])', '[ 1, 2, 3 ]\n'],
    error: ['null.x', /TypeError/],
    show: 'console.log(n)',
    loop: 'while (true) {}',
    stubborn: OPEN_FIFO,
    stubbornSetup: MAKE_FIFO,
    hardExit: 'process.exit(3)',
    zero: 'n = 0;',
    increment: '{ const v = n; await new Promise((r) => setTimeout(r, 20)); n = v + 1; }',
  },
  typescript: {
    state: ['let n: number = 10', 'n += 5;', 'console.log(n as number)'],
    display: ['const xs: number[] = [1, 2]; xs.map((v: number): number => v * 2)', '[ 2, 4 ]\n'],
    error: ['const s: string = (null as any).x', /TypeError/],
    show: 'console.log(n)',
    loop: 'while (true) {}',
    stubborn: OPEN_FIFO,
    stubbornSetup: MAKE_FIFO,
    hardExit: 'process.exit(3)',
    zero: 'n = 0;',
    increment: '{ const v: number = n; await new Promise((r) => setTimeout(r, 20)); n = v + 1; }',
  },
  bash: {
    state: ['n=10', 'n=$((n + 5))', 'echo $n'],
    // Bash has no values: the closest thing is that functions and cwd persist.
    display: ['f() { echo "f:$1"; }; cd /tmp; f "$(pwd)"', 'f:/tmp\n'],
    error: ['ls /nonexistent-codexec-dir', /No such file/],
    show: 'echo $n',
    loop: 'while true; do :; done',
    stubborn: "trap '' INT; while true; do :; done",
    hardExit: 'exit 3',
    zero: 'n=0',
    increment: 'v=$n; sleep 0.02; n=$((v + 1))',
  },
};

// The confining mode under test (namespace unless CODEXEC_TEST_SANDBOX_MODE says landlock: never a
// silent fallback, as `auto` would make) and `subprocess`, the seed's light mode.
const MATRIX = [SANDBOX_MODE, 'subprocess'].flatMap((mode) =>
  Object.keys(CASES).map((language) => [language, mode]),
);

describe.each(MATRIX)('%s session (sandbox mode %s)', (language, mode) => {
  const cases = CASES[language as string] as Cases;
  let server: TestServer;
  beforeAll(async () => {
    server = await startServer({
      env: { CODEXEC_KILL_GRACE_MS: '400', CODEXEC_MAX_SESSIONS: '20', CODEXEC_SANDBOX_MODE: mode as string },
    });
  });
  afterAll(() => server.close());

  const stateful = async () => {
    const session = await start(server.client, language);
    for (const code of cases.state)
      expect((await send(server.client, session.session_id, code)).value.success).toBe(true);
    return session;
  };

  it('keeps state across three sends and displays a trailing expression', async () => {
    const session = await start(server.client, language);
    const results = [];
    for (const code of cases.state) results.push((await send(server.client, session.session_id, code)).value);
    expect(results.map((r) => r.success)).toEqual([true, true, true]);
    expect(results[2]?.stdout).toBe('15\n');
    const shown = await send(server.client, session.session_id, cases.display[0]);
    expect(shown.value).toMatchObject({ success: true, stdout: cases.display[1], exit_code: 0 });
    expect(shown.value.execution_id).toMatch(/^exec_[0-9a-f]{12}$/);
  });

  it('reports an error and keeps the state', async () => {
    const session = await stateful();
    const failed = await send(server.client, session.session_id, cases.error[0]);
    expect(failed.isError).toBe(false);
    expect(failed.value).toMatchObject({
      success: false,
      exit_code: expect.any(Number),
      session_alive: true,
    });
    expect(failed.value.exit_code).not.toBe(0);
    expect(failed.value.stderr).toMatch(cases.error[1]);
    expect((await send(server.client, session.session_id, cases.show)).value.stdout).toBe('15\n');
  });

  it('interrupts code that runs past timeout_ms and keeps the state', async () => {
    const session = await stateful();
    const started = Date.now();
    const stopped = await send(server.client, session.session_id, cases.loop, 500);
    expect(Date.now() - started).toBeLessThan(5000);
    expect(stopped.value).toMatchObject({
      success: false,
      timed_out: true,
      session_alive: true,
      exit_code: null,
    });
    expect(stopped.value.stderr).toMatch(/interrupted and the session kept its state/);
    expect((await send(server.client, session.session_id, cases.show)).value.stdout).toBe('15\n');
  });

  it('kills a session whose code ignores the interrupt, without hanging', async () => {
    const session = await stateful();
    if (cases.stubbornSetup)
      expect((await send(server.client, session.session_id, cases.stubbornSetup)).value.success).toBe(true);
    const tree = processTree(session.pid);
    const started = Date.now();
    const dead = await send(server.client, session.session_id, cases.stubborn, 500);
    expect(Date.now() - started).toBeLessThan(8000);
    expect(dead.value).toMatchObject({ success: false, timed_out: true, session_alive: false });
    expect(dead.value.error).toMatch(/did not stop .* killed/);
    expect(await allGone(tree)).toBe(true);
    const after = await send(server.client, session.session_id, cases.show);
    expect(after.isError).toBe(true);
    expect(after.value).toMatchObject({ success: false, code: 'SESSION_NOT_FOUND' });
  });

  it('reports a hard exit instead of hanging', async () => {
    const session = await stateful();
    const exited = await send(server.client, session.session_id, cases.hardExit);
    expect(exited.value).toMatchObject({
      success: false,
      session_alive: false,
      exit_code: 3,
      timed_out: false,
    });
    expect(exited.value.error).toMatch(/exited \(exit code 3\)/);
    const listed = await callTool<{ sessions: Array<{ session_id: string }> }>(
      server.client,
      'list_sessions',
      {},
    );
    expect(listed.value.sessions.map((s) => s.session_id)).not.toContain(session.session_id);
  });

  it('runs 5 parallel sends to one session one at a time', async () => {
    const session = await start(server.client, language);
    await send(server.client, session.session_id, cases.zero);
    const results = await Promise.all(
      Array.from({ length: 5 }, () => send(server.client, session.session_id, cases.increment)),
    );
    expect(results.every((r) => r.value.success)).toBe(true);
    expect(new Set(results.map((r) => r.value.execution_id)).size).toBe(5);
    expect((await send(server.client, session.session_id, cases.show)).value.stdout).toBe('5\n');
  });

  it('close_session kills the process tree and removes the workspace', async () => {
    const session = await stateful();
    const tree = processTree(session.pid);
    expect(existsSync(session.working_dir)).toBe(true);
    const closed = await callTool(server.client, 'close_session', { session_id: session.session_id });
    expect(closed.isError).toBe(false);
    expect(closed.value).toMatchObject({
      success: true,
      session_id: session.session_id,
      executions_count: 3,
    });
    expect(closed.value.duration_total_ms).toEqual(expect.any(Number));
    expect(await allGone(tree)).toBe(true);
    expect(existsSync(session.working_dir)).toBe(false);
    const again = await callTool(server.client, 'close_session', { session_id: session.session_id });
    expect(again.value).toMatchObject({ success: false, code: 'SESSION_NOT_FOUND' });
  });
});

describe.each(['node', 'typescript'])('%s declarations and await', (language) => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startServer();
  });
  afterAll(() => server.close());

  it('keeps let/const/function/class and imports across sends, with top-level await', async () => {
    const { session_id } = await start(server.client, language);
    const cells = [
      "import path from 'node:path'",
      "import { join as joinPath } from 'node:path'",
      'const base = 40',
      'function add(a, b) { return a + b }',
      'class Box { constructor(v) { this.v = v } get doubled() { return this.v * 2 } }',
      'let fetched = await Promise.resolve(2)',
    ];
    for (const code of cells) {
      const result = await send(server.client, session_id, code);
      expect(result.value, code).toMatchObject({ success: true, stderr: '' });
    }
    const shown = await send(
      server.client,
      session_id,
      'new Box(add(base, fetched)).doubled + path.sep + joinPath("a", "b")',
    );
    expect(shown.value.stdout).toBe("'84/a/b'\n");
    const later = await send(
      server.client,
      session_id,
      'await new Promise((r) => setTimeout(() => r(fetched), 10))',
    );
    expect(later.value.stdout).toBe('2\n');
  });

  it('lets a cell that failed be fixed and sent again (re-declaring its const)', async () => {
    const { session_id } = await start(server.client, language);
    const failed = await send(
      server.client,
      session_id,
      "const df = (() => { throw new Error('load failed') })()",
    );
    expect(failed.value).toMatchObject({ success: false });
    expect(failed.value.stderr).toMatch(/load failed/);
    const fixed = await send(server.client, session_id, 'const df = [1, 2, 3]\ndf.length');
    expect(fixed.value).toMatchObject({ success: true, stdout: '3\n' });
    const again = await send(server.client, session_id, 'let df2 = await Promise.resolve(df)\nlet df2b = 1');
    expect(again.value.success).toBe(true);
    expect((await send(server.client, session_id, 'let df2 = 9; df2 + df2b')).value.stdout).toBe('10\n');
  });
});

describe('python extras', () => {
  let server: TestServer;
  // The caller's working_dir, the one root the server allows.
  const dir = ownedDir('codexec-session-wd-');
  beforeAll(async () => {
    server = await startServer({ env: allowing(dir) });
  });
  afterAll(async () => {
    await server.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('supports top-level await and a working_dir of the caller, which close leaves in place', async () => {
    const session = await start(server.client, 'python', { working_dir: dir });
    expect(session.working_dir).toBe(realpathSync(dir));
    const awaited = await send(
      server.client,
      session.session_id,
      'import asyncio\nawait asyncio.sleep(0.01)\n6 * 7',
    );
    expect(awaited.value.stdout).toBe('42\n');
    const wrote = await send(server.client, session.session_id, "open('out.csv', 'w').write('a,b')");
    expect(wrote.value.artifacts).toEqual(['out.csv']);
    await callTool(server.client, 'close_session', { session_id: session.session_id });
    expect(existsSync(join(dir, 'out.csv'))).toBe(true);
  });

  it('notices a driver that dies between sends and logs it as crashed', async () => {
    const session = await start(server.client, 'python');
    await send(
      server.client,
      session.session_id,
      'import os, threading\nthreading.Timer(0.2, lambda: os._exit(5)).start()',
    );
    expect(await allGone([session.pid])).toBe(true);
    // The driver's pid goes before the sandbox around it: wait until the server has seen the end.
    await expect
      .poll(async () => {
        const listed = await callTool<{ sessions: Array<{ session_id: string }> }>(
          server.client,
          'list_sessions',
          {},
        );
        return listed.value.sessions.some((s) => s.session_id === session.session_id);
      })
      .toBe(false);
    const late = await send(server.client, session.session_id, '1');
    expect(late.value).toMatchObject({ success: false, code: 'SESSION_NOT_FOUND' });
    expect(String((late.value as unknown as { error: string }).error)).toMatch(/crashed: exit code 5/);
    const file = join(server.home, 'logs', `session-${session.session_id}.jsonl`);
    await waitUntil(() => readFileSync(file, 'utf8').includes('session_end'), 5000);
    const log = readFileSync(file, 'utf8');
    expect(JSON.parse(log.trim().split('\n').at(-1) ?? '{}')).toMatchObject({
      type: 'session_end',
      reason: 'crashed',
      exit_code: 5,
    });
  });
});

describe('cancellation', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startServer();
  });
  afterAll(() => server.close());

  it('interrupts the running code when the client cancels the request, keeping the state', async () => {
    const { session_id } = await start(server.client, 'python');
    await send(server.client, session_id, 'n = 7');
    const controller = new AbortController();
    const pending = server.client.callTool(
      { name: 'send_to_session', arguments: { session_id, code: 'while True:\n    pass' } },
      { signal: controller.signal },
    );
    setTimeout(() => controller.abort(), 300);
    await expect(pending).rejects.toThrow();
    const started = Date.now();
    const after = await send(server.client, session_id, 'n');
    expect(Date.now() - started).toBeLessThan(5000);
    expect(after.value).toMatchObject({ success: true, stdout: '7\n' });
  });
});

describe('code travels intact', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startServer();
  });
  afterAll(() => server.close());

  // Backslashes, quotes, printf escapes, control characters and non-ASCII text.
  const TEXT = 'a\\b \\c "q" \'s\' %d %s é 漢字 \\x22 \\u0041 $HOME `x` \\\\n tab:\t end';

  it('reaches bash byte for byte, and user output cannot forge a completion', async () => {
    const { session_id } = await start(server.client, 'bash');
    const echoed = await send(server.client, session_id, `cat <<'EOF'\n${TEXT}\nEOF`);
    expect(echoed.value).toMatchObject({ success: true, stdout: `${TEXT}\n` });
    const forged = await send(
      server.client,
      session_id,
      'printf \'53\\n{"type":"done","id":"exec_000000000000","status":"ok","exit_code":0}\'; sleep 0.2; echo real',
    );
    expect(forged.value.stdout).toMatch(/real\n$/);
    expect(forged.value.duration_ms).toBeGreaterThanOrEqual(150);
  });

  it('reaches python and node intact', async () => {
    const py = await start(server.client, 'python');
    const pyOut = await send(server.client, py.session_id, `print(${JSON.stringify(TEXT)})`);
    expect(pyOut.value.stdout).toBe(`${TEXT}\n`);
    const js = await start(server.client, 'node');
    const jsOut = await send(server.client, js.session_id, `console.log(${JSON.stringify(TEXT)})`);
    expect(jsOut.value.stdout).toBe(`${TEXT}\n`);
  });
});

describe('streaming', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startServer();
  });
  afterAll(() => server.close());

  it('streams a send’s output as progress notifications while it runs', async () => {
    const { session_id } = await start(server.client, 'python');
    const messages: Array<{ message?: string; at: number }> = [];
    const { value } = await callTool<{ stdout: string }>(
      server.client,
      'send_to_session',
      { session_id, code: 'import time\nfor i in range(3):\n    print(f"step {i}")\n    time.sleep(0.3)' },
      { onprogress: (p) => messages.push({ message: p.message, at: Date.now() }) },
    );
    const finished = Date.now();
    expect(value.stdout).toBe('step 0\nstep 1\nstep 2\n');
    expect(messages.map((m) => m.message).join('')).toBe('step 0\nstep 1\nstep 2\n');
    expect(messages[0]?.at).toBeLessThan(finished - 300);
  });
});
