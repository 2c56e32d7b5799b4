// start_session {pty: true} through the real server: a bash session on a pseudo-terminal made in
// the sandbox by drivers/pty_relay.py, in namespace, landlock (its launcher opens the terminal
// before confining) and subprocess mode and (where the engine and an image with python3 are here)
// docker mode.
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { IS_ROOT, SANDBOX_MODE } from '../helpers/mode.js';
import { processesWith, sleepMarker } from '../helpers/procs.js';
import { callTool, startServer, type TestServer } from '../helpers/server.js';
import { DOCKER_MODE, engine, ensureImage, IMAGE } from '../sandbox/container/engine.js';
import { allGone, processTree, type SendValue, send, start, waitUntil } from './helpers.js';

/** Why docker mode cannot run here, or undefined. */
function dockerMissing(): string | undefined {
  const binary = DOCKER_MODE.CODEXEC_CONTAINER_ENGINE as string;
  if (spawnSync('sh', ['-c', `command -v ${binary}`], { stdio: 'ignore' }).status !== 0)
    return `${binary} is not installed`;
  try {
    ensureImage();
    const python = engine('image', 'inspect', IMAGE, '--format', '{{index .Config.Labels "codexec.python"}}');
    return python.trim() && python.trim() !== '<no value>' ? undefined : `the image ${IMAGE} has no python3`;
  } catch (error) {
    return `no image ${IMAGE}: ${(error as Error).message}`;
  }
}

// The confining modes, subprocess, and docker as root (an ordinary user's pass would build the image for that user: minutes).
const COLUMNS: ReadonlyArray<{ mode: string; env: Record<string, string>; missing?: string }> = [
  ...(SANDBOX_MODE === 'namespace'
    ? [{ mode: 'namespace', env: { CODEXEC_SANDBOX_MODE: 'namespace' } }]
    : []),
  // Its launcher opens the terminal before confining (the rules grant no /dev/ptmx) and hands it over.
  { mode: 'landlock', env: { CODEXEC_SANDBOX_MODE: 'landlock' } },
  { mode: 'subprocess', env: { CODEXEC_SANDBOX_MODE: 'subprocess' } },
  { mode: 'docker', env: DOCKER_MODE, missing: IS_ROOT ? dockerMissing() : 'run as root only' },
];

const LINES = 5000;
const counted = Array.from({ length: LINES }, (_, i) => `${i + 1}\n`).join('');

describe.each(COLUMNS)('a bash session on a pty (sandbox mode $mode)', ({ mode, env, missing }) => {
  if (missing) console.warn(`pty tests in docker mode skipped: ${missing}`);
  let server: TestServer;
  beforeAll(async () => {
    if (missing) return;
    server = await startServer({
      env: {
        ...env,
        CODEXEC_MAX_OUTPUT_CHARS: '1000000',
        CODEXEC_KILL_GRACE_MS: '3000',
        CODEXEC_MAX_SESSIONS: '20',
      },
    });
  }, 120_000);
  afterAll(() => server?.close());

  const pty = () => start(server.client, 'bash', { pty: true });

  it.skipIf(missing)(
    'runs on a terminal: stdin, stdout and stderr are a /dev/pts, 200x50, no echo',
    async () => {
      const { session_id } = await pty();
      const code = [
        '[ -t 0 ] && [ -t 1 ] && [ -t 2 ] && echo tty',
        'readlink /proc/$$/fd/0',
        'shopt -s checkwinsize; /bin/true; echo "$COLUMNS x $LINES"',
        'echo "TERM=$TERM"',
      ].join('\n');
      const { value } = await send(server.client, session_id, code);
      expect(value.stdout).toMatch(/^tty\n\/dev\/pts\/\d+\n200 x 50\nTERM=dumb\n$/);
      expect(value.stdout).not.toContain('\r');
      // A sandbox's /dev/pts is a devpts instance of its own, never the host's terminals.
      // (landlock's is the host's devpts, as the sandbox shares the host's /dev.)
      if (mode !== 'subprocess' && mode !== 'landlock') expect(value.stdout).toContain('\n/dev/pts/0\n');
      if (mode !== 'docker') {
        // The image built from the host has neither tty nor stty; the host has both.
        const terminal = await send(server.client, session_id, 'tty; stty size; stty -a');
        expect(terminal.value.stdout).toMatch(/^\/dev\/pts\/\d+\n50 200\n/);
        expect(terminal.value.stdout).toMatch(/ -echo /);
        expect(terminal.value.stdout).toMatch(/ -onlcr /);
      }
    },
  );

  it.skipIf(missing)('returns all the output of each cell, in order, none in the next', async () => {
    const { session_id } = await pty();
    for (let round = 0; round < 30; round++) {
      const many = await send(server.client, session_id, `seq 1 ${LINES}`);
      expect(many.value).toMatchObject({ success: true, stderr: '', truncated: false });
      expect(many.value.stdout).toBe(counted);
      expect((await send(server.client, session_id, 'echo next')).value.stdout).toBe('next\n');
    }
    expect((await send(server.client, session_id, 'printf "no newline"')).value.stdout).toBe('no newline');
    expect((await send(server.client, session_id, 'echo after')).value.stdout).toBe('after\n');
  });

  it.skipIf(missing)('a prompt on the terminal returns waiting_for_input; input answers it', async () => {
    const { session_id } = await pty();
    const ask = (args: Record<string, unknown>) =>
      callTool<{ stdout: string; success: boolean; waiting_for_input?: true; prompt?: string }>(
        server.client,
        'send_to_session',
        { session_id, timeout_ms: 20_000, ...args },
      );
    // The relay always waits on the session's stdin: that is no wait of the code's.
    const quiet = await ask({ code: 'sleep 1; echo slept' });
    expect(quiet.value).toMatchObject({ success: true, stdout: 'slept\n' });
    expect(quiet.value.waiting_for_input).toBeUndefined();
    // read -p shows its prompt only on a terminal.
    const asked = await ask({ code: 'read -p "Continue? [y/N] " answer; echo "got $answer"' });
    expect(asked.value).toMatchObject({ waiting_for_input: true, prompt: 'Continue? [y/N] ' });
    expect((await ask({ input: 'y' })).value).toMatchObject({ success: true, stdout: 'got y\n' });
    const python = await ask({ code: 'python3 -c \'print("hi", input("Name: "))\'' });
    expect(python.value).toMatchObject({ waiting_for_input: true, prompt: 'Name: ' });
    expect((await ask({ input: 'Ada' })).value).toMatchObject({ success: true, stdout: 'hi Ada\n' });
  });

  it.skipIf(missing)('merges stderr into stdout, as a terminal does', async () => {
    const { session_id } = await pty();
    const { value } = await send(
      server.client,
      session_id,
      'echo out; echo err >&2; ls /nonexistent-pty; echo end',
    );
    expect(value.stderr).toBe('');
    expect(value.stdout).toMatch(/^out\nerr\n.*nonexistent-pty.*\nend\n$/);
  });

  it.skipIf(missing)(
    'reports exit codes and keeps state (cd, variables, functions) across cells',
    async () => {
      const { session_id } = await pty();
      expect((await send(server.client, session_id, '(exit 3)')).value).toMatchObject({
        success: false,
        exit_code: 3,
        session_alive: true,
      });
      expect((await send(server.client, session_id, 'false')).value).toMatchObject({ exit_code: 1 });
      const set = await send(
        server.client,
        session_id,
        'mkdir -p sub && cd sub; n=41; hi() { echo "hi $1"; }',
      );
      expect(set.value).toMatchObject({ success: true, exit_code: 0 });
      const used = await send(server.client, session_id, 'echo "${PWD##*/} $((n + 1))"; hi there');
      expect(used.value.stdout).toBe('sub 42\nhi there\n');
      // exit ends the shell, the relay passes its status on, and the send says so.
      const ended = await send(server.client, session_id, 'echo bye; exit 4');
      expect(ended.value).toMatchObject({ stdout: 'bye\n', exit_code: 4, session_alive: false });
    },
  );

  it.skipIf(missing)('interrupts a cell on timeout, keeps its output and the session', async () => {
    const { session_id } = await pty();
    await send(server.client, session_id, 'kept=yes');
    const started = Date.now();
    const stopped = await send(server.client, session_id, 'echo before; sleep 100; echo never', 1500);
    expect(Date.now() - started).toBeLessThan(15_000);
    expect(stopped.value).toMatchObject({ timed_out: true, session_alive: true, stdout: 'before\n' });
    expect(stopped.value.stderr).toMatch(/interrupted and the session kept its state/);
    expect((await send(server.client, session_id, 'echo "$kept"')).value.stdout).toBe('yes\n');
  });

  it.skipIf(missing)("interrupts bash's own read of the terminal, and a program's", async () => {
    const { session_id } = await pty();
    for (const reader of ['read line', 'f() { read -r line; echo never; }; f', 'head -1']) {
      const waiting = await send(server.client, session_id, `echo before; ${reader}; echo never`, 20_000);
      expect(waiting.value, reader).toMatchObject({ waiting_for_input: true, stdout: 'before\n' });
      const stopped = await callTool<SendValue>(server.client, 'send_to_session', {
        session_id,
        interrupt: true,
      });
      expect(stopped.value, reader).toMatchObject({ cancelled: true, session_alive: true, stdout: '' });
      expect(stopped.value.exit_code, reader).toBeNull();
    }
    expect((await send(server.client, session_id, 'echo alive')).value.stdout).toBe('alive\n');
  });

  it.skipIf(missing)('lists the session with pty: true, and another without', async () => {
    const withPty = await pty();
    const plain = await start(server.client, 'bash');
    const { value } = await callTool<{ sessions: Array<{ session_id: string; pty: boolean }> }>(
      server.client,
      'list_sessions',
      {},
    );
    const listed = new Map(value.sessions.map((s) => [s.session_id, s.pty]));
    expect(listed.get(withPty.session_id)).toBe(true);
    expect(listed.get(plain.session_id)).toBe(false);
    for (const { session_id } of [withPty, plain])
      await callTool(server.client, 'close_session', { session_id });
  });

  it.runIf(mode === 'landlock')(
    'landlock: the terminal handed over is the only one code reaches',
    async () => {
      const { session_id } = await pty();
      const { value } = await send(
        server.client,
        session_id,
        [
          'tty',
          'for path in /dev/ptmx /dev/pts/ptmx /dev/tty0; do (exec 9<>"$path") 2>/dev/null && echo "opened $path"; done',
          'for path in /dev/pts/[0-9]*; do [ "$path" = "$(tty)" ] || { (exec 9<>"$path") 2>/dev/null && echo "opened $path"; }; done',
          'echo checked',
        ].join('\n'),
      );
      expect(value.stdout).toMatch(/^\/dev\/pts\/\d+\nchecked\n$/);
    },
  );

  it.skipIf(missing || mode === 'subprocess' || mode === 'landlock')(
    "sees no terminal of the host's",
    async () => {
      const { session_id } = await pty();
      // The device numbers of the filesystems mounted at /dev/pts (a bind of the host's shares one).
      const devpts = (mountinfo: string) =>
        mountinfo
          .split('\n')
          .map((line) => line.split(' '))
          .filter((fields) => fields[4] === '/dev/pts')
          .map((fields) => fields[2]);
      const { value } = await send(server.client, session_id, 'cat /proc/self/mountinfo');
      const inside = devpts(value.stdout);
      expect(inside.length).toBeGreaterThan(0);
      const host = devpts(readFileSync('/proc/self/mountinfo', 'utf8'));
      for (const device of inside) expect(host).not.toContain(device);
    },
  );

  it.skipIf(missing)('leaves no process behind when closed, background jobs included', async () => {
    const session = await pty();
    const marker = sleepMarker();
    await send(server.client, session.session_id, `sleep ${marker} &`);
    const sleeping = await waitUntil(() => processesWith(marker).length === 1, 10_000);
    expect(sleeping).toBe(true);
    // A container's processes are the engine's children, not the server's.
    const tree = mode === 'docker' ? [] : processTree(session.pid);
    if (mode !== 'docker') expect(tree.length).toBeGreaterThanOrEqual(3); // relay, driver, sleep (and bwrap)
    const closed = await callTool(server.client, 'close_session', { session_id: session.session_id });
    expect(closed.isError).toBe(false);
    expect(await waitUntil(() => processesWith(marker).length === 0, 15_000)).toBe(true);
    expect(await allGone(tree)).toBe(true);
  });
});

describe('pty refusals', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startServer(); // refused before any sandbox starts: whatever the mode
  });
  afterAll(() => server.close());

  it('refuses pty: true for a language other than bash, naming it', async () => {
    for (const language of ['python', 'node']) {
      const refused = await callTool(server.client, 'start_session', { language, pty: true });
      expect(refused.isError).toBe(true);
      expect(refused.value).toMatchObject({ code: 'INVALID_INPUT' });
      expect(String(refused.value.error)).toContain(language);
    }
  });
});
