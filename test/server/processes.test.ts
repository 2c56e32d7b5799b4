import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { type AddressInfo, createServer } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { connectHttp, startHttp } from '../helpers/http.js';
import { SANDBOX_MODE } from '../helpers/mode.js';
import { processesWith, sleepMarker } from '../helpers/procs.js';
import { callTool, startServer, type TestServer, tempDir } from '../helpers/server.js';

// Background processes in a session (start_process and the tools after it), over stdio.

interface Info {
  process_id: string;
  session_id: string;
  command: string;
  pid: number | null;
  running: boolean;
  exit_code: number | null;
  signal: string | null;
  started_at: string;
  output_bytes: number;
}
interface Page extends Info {
  output: string;
  offset: number;
  next_offset: number;
  dropped_bytes: number;
  more: boolean;
}
interface Refusal {
  success: false;
  code: string;
  error: string;
}

const CANARY = 'sk-ant-canary-proc-5151';

/** Poll `read` until `done` says yes (or fail after `ms`). */
async function until<T>(read: () => Promise<T>, done: (value: T) => boolean, ms = 10_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await read();
    if (done(value)) return value;
    if (Date.now() > deadline) throw new Error(`timed out; last: ${JSON.stringify(value)}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

describe('background processes', () => {
  let server: TestServer;
  let session: string;
  const call = <T>(name: string, args: Record<string, unknown>) => callTool<T>(server.client, name, args);
  const start = (command: string, sessionId = session) =>
    call<Info>('start_process', { session_id: sessionId, command });
  const read = (processId: string, offset?: number) =>
    call<Page>('read_process_output', { process_id: processId, ...(offset !== undefined && { offset }) });
  /** Each session's working directory, where a cell leaves the marks the tests wait for. */
  const dirs = new Map<string, string>();
  const newSession = async (language = 'python') => {
    const { value } = await call<{ session_id: string; working_dir: string }>('start_session', { language });
    dirs.set(value.session_id, value.working_dir);
    return value.session_id;
  };
  /** Wait until the cell running in session `id` has left `name` in its directory (`sub` below it). */
  const marked = (id: string, name: string, sub = '') =>
    until(
      async () => existsSync(join(dirs.get(id) as string, sub, name)),
      (found) => found,
      30_000,
    );

  beforeAll(async () => {
    server = await startServer({
      env: { CODEXEC_MAX_PROCESSES_PER_SESSION: '3', ANTHROPIC_API_KEY: CANARY },
    });
    session = await newSession();
  });
  afterAll(() => server.close());

  it('keeps a loop running between calls; its output grows by offset', async () => {
    const started = await start('while true; do echo tick; sleep 0.2; done');
    expect(started.isError).toBe(false);
    expect(started.value).toMatchObject({ session_id: session, running: true, exit_code: null });
    expect(started.value.process_id).toMatch(/^proc_[0-9a-f]{12}$/);
    const id = started.value.process_id;
    const first = await until(
      () => read(id),
      (page) => page.value.output.split('tick').length > 2,
    );
    expect(first.value).toMatchObject({ running: true, offset: 0, dropped_bytes: 0 });
    expect(first.value.next_offset).toBe(Buffer.byteLength(first.value.output));
    const later = await until(
      () => read(id, first.value.next_offset),
      (page) => page.value.output.includes('tick'),
    );
    expect(later.value.offset).toBe(first.value.next_offset);
    expect(later.value.next_offset).toBeGreaterThan(first.value.next_offset);
    expect(later.value.output).toMatch(/^(tick\n)+$/);
    // A send to the session still runs, and the process goes on.
    const sent = await call<{ stdout: string }>('send_to_session', {
      session_id: session,
      code: 'print(6*7)',
    });
    expect(sent.value.stdout).toBe('42\n');
    const killed = await call<Info>('kill_process', { process_id: id });
    expect(killed.value).toMatchObject({ running: false, exit_code: null, signal: 'SIGKILL' });
  });

  // A process's output comes on the control channel, a cell's `done` too, the cell's output on its
  // own streams: the server, woken for the channel, could read `done` before the cell's last output.
  const printing: Record<string, (n: number) => string> = {
    python: (n) => `import sys\nprint(${n})\nprint("e${n}", file=sys.stderr)`,
    node: (n) => `console.log(${n}); console.error("e${n}")`,
    bash: (n) => `echo ${n}; echo e${n} >&2`,
  };
  it.each(Object.keys(printing))(
    "gives each send its whole output while a process's output keeps the channel busy (%s)",
    async (language) => {
      const id = await newSession(language);
      onTestFinished(() => call('close_session', { session_id: id }).then(() => {}));
      // A frame every ~0.1 ms: about one send in eight lost its output to this before the marks.
      const ticker = 'import os, time\nwhile True:\n    os.write(1, b".")\n    time.sleep(0.0001)';
      const { value } = await start(`exec python3 -c '${ticker}'`, id);
      await until(
        () => read(value.process_id),
        (page) => page.value.output.includes('.'),
      );
      const wrong: string[] = [];
      for (let n = 0; n < 100; n++) {
        const sent = await call<{ stdout: string; stderr: string }>('send_to_session', {
          session_id: id,
          code: printing[language]?.(n),
        });
        if (sent.value.stdout !== `${n}\n` || sent.value.stderr !== `e${n}\n`)
          wrong.push(JSON.stringify(sent.value));
      }
      expect(wrong).toEqual([]);
    },
  );
  // Without a network, a namespace-mode session has a loopback of its own (as Docker's --network
  // none): its servers serve its sends, and nothing else is reached. Landlock mode has no network
  // namespace: its loopback would be the host's, so it keeps Unix sockets only.
  it.runIf(SANDBOX_MODE === 'namespace')(
    "serves on the session's own loopback without a network; nothing outside is reached",
    async () => {
      const id = await newSession();
      // Closed whatever happens: its server would count among the next tests' processes.
      onTestFinished(() => call('close_session', { session_id: id }).then(() => {}));
      const port = 20_000 + Math.floor(Math.random() * 20_000);
      const { value } = await start(`exec python3 -u -m http.server ${port} --bind 127.0.0.1`, id);
      await until(
        () => read(value.process_id),
        (page) => page.value.output.includes('Serving HTTP') || !page.value.running,
      );
      const fetched = await call<{ stdout: string; stderr: string }>('send_to_session', {
        session_id: id,
        code:
          'import socket, urllib.request\n' +
          `print(urllib.request.urlopen('http://127.0.0.1:${port}/').status)\n` +
          'try:\n    socket.create_connection(("1.1.1.1", 80), timeout=2)\n    print("outside reached")\n' +
          'except OSError as error:\n    print("outside refused", error.errno)\n' +
          'try:\n    socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n    print("udp")\n' +
          'except OSError as error:\n    print("no udp", error.errno)',
      });
      // (The whole answer on a failure: once, under two suites, this send came back empty.)
      expect(fetched.value.stdout, JSON.stringify(fetched.value)).toMatch(
        /^200\noutside refused \d+\nno udp 13\n$/,
      );
      // The host's loopback is not the session's: a server on the host is not reached.
      const host = createServer((socket) => socket.end('host\n'));
      await new Promise<void>((resolve) => host.listen(0, '127.0.0.1', resolve));
      try {
        const hostPort = (host.address() as AddressInfo).port;
        const probe = await call<{ stdout: string }>('send_to_session', {
          session_id: id,
          code: `import socket\ntry:\n    print(socket.create_connection(("127.0.0.1", ${hostPort}), timeout=2).recv(9))\nexcept OSError as error:\n    print("host refused", error.errno)`,
        });
        expect(probe.value.stdout).toMatch(/^host refused \d+\n$/);
      } finally {
        host.close();
      }
    },
  );

  it.runIf(SANDBOX_MODE === 'landlock')(
    "keeps landlock's network rules: no TCP socket without a network",
    async () => {
      const { value } = await start('exec python3 -m http.server 8000 --bind 127.0.0.1');
      const end = await until(
        () => read(value.process_id),
        (page) => !page.value.running,
      );
      expect(end.value.exit_code).toBe(1);
      expect(end.value.output).toContain('PermissionError');
    },
  );

  it('serves http from the session workspace while sends go on (network host)', async () => {
    const own = await startServer({ env: { CODEXEC_NETWORK: 'host' } });
    try {
      const run = <T>(name: string, args: Record<string, unknown>) => callTool<T>(own.client, name, args);
      const id = (await run<{ session_id: string }>('start_session', { language: 'python' })).value
        .session_id;
      await run('send_to_session', {
        session_id: id,
        code: "with open('hello.txt', 'w') as f:\n    f.write('hi from the workspace')",
      });
      const { value } = await run<Info>('start_process', {
        session_id: id,
        // Port 0: the kernel's choice, which no other test on the host network holds.
        command: 'exec python3 -u -m http.server 0 --bind 127.0.0.1',
      });
      const serving = await until(
        () => run<Page>('read_process_output', { process_id: value.process_id }),
        (page) => /Serving HTTP on \S+ port \d+/.test(page.value.output),
      );
      const port = /port (\d+)/.exec(serving.value.output)?.[1];
      const fetched = await run<{ stdout: string; stderr: string }>('send_to_session', {
        session_id: id,
        code: `import urllib.request; print(urllib.request.urlopen('http://127.0.0.1:${port}/hello.txt').read().decode())`,
      });
      expect(fetched.value.stdout, fetched.value.stderr).toBe('hi from the workspace\n');
      // The server's access line reaches the process's output after the response: waited for.
      await until(
        () => run<Page>('read_process_output', { process_id: value.process_id }),
        (page) => page.value.output.includes('"GET /hello.txt HTTP/1.1" 200'),
      );
    } finally {
      await own.close();
    }
  });

  it('writes to stdin, and eof ends a process that reads to the end; secrets are masked', async () => {
    // The secret is made by the shell: the command itself does not carry it.
    const { value } = await start('cat; echo "done sk-ant-canary-proc-$((5150 + 1))" >&2; exit 3');
    const wrote = await call<Info & { bytes_written: number }>('write_stdin', {
      process_id: value.process_id,
      data: 'first line\n',
    });
    expect(wrote.value.bytes_written).toBe(11);
    await until(
      () => read(value.process_id),
      (page) => page.value.output === 'first line\n',
    );
    await call('write_stdin', { process_id: value.process_id, data: 'last ', eof: true });
    const end = await until(
      () => read(value.process_id),
      (page) => !page.value.running,
    );
    expect(end.value.exit_code).toBe(3);
    expect(end.value.signal).toBeNull();
    expect(end.value.output).toMatch(/^first line\nlast done \S+\n$/);
    expect(end.value.output_bytes).toBe(Buffer.byteLength(end.value.output));
    expect(end.value.output).not.toContain(CANARY);
    const late = await call<Refusal>('write_stdin', { process_id: value.process_id, data: 'x' });
    expect(late.isError).toBe(true);
    expect(late.value.code).toBe('INVALID_INPUT');
  });

  it('kill_process ends the whole process group, leaving nothing running', async () => {
    const marker = sleepMarker();
    const { value } = await start(`sleep ${marker} & sleep ${marker}; wait`);
    await until(
      async () => processesWith(marker).length,
      (count) => count === 2,
    );
    const killed = await call<Info>('kill_process', { process_id: value.process_id });
    expect(killed.value).toMatchObject({ running: false, signal: 'SIGKILL' });
    await until(
      async () => processesWith(marker).length,
      (count) => count === 0,
    );
  });

  it('close_session kills every process of the session', async () => {
    const other = await newSession();
    const marker = sleepMarker();
    const ids: string[] = [];
    for (const _ of [1, 2]) ids.push((await start(`sleep ${marker}`, other)).value.process_id);
    await until(
      async () => processesWith(marker).length,
      (count) => count === 2,
    );
    await call('close_session', { session_id: other });
    expect(processesWith(marker)).toEqual([]);
    const listed = await call<{ processes: Info[] }>('list_processes', {});
    expect(listed.value.processes.map((p) => p.process_id)).not.toContain(ids[0]);
    const gone = await read(ids[0] as string);
    expect(gone.isError).toBe(true);
    expect(gone.value).toMatchObject({ code: 'NOT_FOUND' });
    expect((gone.value as unknown as Refusal).error).toContain(`its session ${other} ended`);
    // The session's log has each process's start and end, before the session's end.
    const lines = readFileSync(join(server.home, 'logs', `session-${other}.jsonl`), 'utf8')
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { type: string; process_id?: string; signal?: string });
    const kinds = lines.map((line) => `${line.type}${line.process_id ? ` ${line.process_id}` : ''}`);
    expect(kinds).toEqual([
      'session_start',
      `process_start ${ids[0]}`,
      `process_start ${ids[1]}`,
      expect.stringMatching(/^process_end proc_/),
      expect.stringMatching(/^process_end proc_/),
      'session_end',
    ]);
    expect(lines.filter((line) => line.type === 'process_end').map((line) => line.signal)).toEqual([
      'SIGKILL',
      'SIGKILL',
    ]);
  });

  it('lists processes and caps them per session, naming the setting', async () => {
    const ids = [];
    for (const n of [1, 2, 3]) ids.push((await start(`sleep 60; echo ${n}`)).value.process_id);
    const over = await call<Refusal>('start_process', { session_id: session, command: 'true' });
    expect(over.isError).toBe(true);
    expect(over.value.code).toBe('LIMIT_REACHED');
    expect(over.value.error).toContain('CODEXEC_MAX_PROCESSES_PER_SESSION=3');
    const { value } = await call<{ processes: Info[] }>('list_processes', {});
    const running = value.processes.filter((p) => p.running);
    expect(running.map((p) => p.process_id).sort()).toEqual([...ids].sort());
    expect(running[0]).toMatchObject({ session_id: session, command: 'sleep 60; echo 1' });
    for (const id of ids) await call('kill_process', { process_id: id });
    expect((await start('true')).isError).toBe(false);
  });

  it('refuses bad ids, and write_stdin given both a process and a session', async () => {
    for (const [tool, args] of [
      ['read_process_output', { process_id: 'proc_000000000000' }],
      ['kill_process', { process_id: 'nope' }],
      ['write_stdin', { process_id: 'proc_000000000000', data: 'x' }],
    ] as const) {
      const { isError, value } = await call<Refusal>(tool, args);
      expect(isError).toBe(true);
      expect(value.code).toBe('NOT_FOUND');
    }
    // The gate reads the command as execute_command's (the built-in rule against dd, here).
    const blocked = await call<Refusal>('start_process', {
      session_id: session,
      command: 'true; dd if=/dev/zero of=x',
    });
    expect(blocked.value.code).toBe('COMMAND_BLOCKED');
    const unknown = await call<Refusal>('start_process', {
      session_id: 'sess_000000000000',
      command: 'true',
    });
    expect(unknown.value.code).toBe('SESSION_NOT_FOUND');
    const both = await call<Refusal>('write_stdin', {
      session_id: session,
      process_id: 'proc_000000000000',
      data: 'x',
    });
    expect(both.value).toMatchObject({ code: 'INVALID_INPUT' });
    expect(both.value.error).toContain('either process_id');
  });

  it("outlives a send's timeout (its interrupt), and dies when the session crashes", async () => {
    const crashing = await newSession();
    const marker = sleepMarker();
    // Started while a cell runs (the driver then handles SIGINT itself) and interrupted with it.
    const slow = call<{ timed_out: boolean; session_alive: boolean }>('send_to_session', {
      session_id: crashing,
      code: 'import time; open("running", "w").close(); time.sleep(30)',
      timeout_ms: 1500,
    });
    await marked(crashing, 'running');
    const { value } = await start(`sleep ${marker}`, crashing);
    expect((await slow).value).toMatchObject({ timed_out: true, session_alive: true });
    expect((await read(value.process_id)).value.running).toBe(true);
    expect(processesWith(marker)).toHaveLength(1);
    const crash = await call<{ session_alive: boolean }>('send_to_session', {
      session_id: crashing,
      code: 'import os; os._exit(7)',
    });
    expect(crash.value.session_alive).toBe(false);
    await until(
      async () => processesWith(marker).length,
      (count) => count === 0,
    );
    expect((await read(value.process_id)).value).toMatchObject({ code: 'NOT_FOUND' });
  });

  it('keeps the last CODEXEC_MAX_PROCESS_OUTPUT_BYTES of output and says what was dropped', async () => {
    const own = await startServer({ env: { CODEXEC_MAX_PROCESS_OUTPUT_BYTES: '4096' } });
    try {
      const id = (await callTool<{ session_id: string }>(own.client, 'start_session', { language: 'python' }))
        .value.session_id;
      const started = await callTool<Info>(own.client, 'start_process', {
        session_id: id,
        command: 'for i in $(seq 1 2000); do printf "%05d\\n" $i; done',
      });
      const page = await until(
        () => callTool<Page>(own.client, 'read_process_output', { process_id: started.value.process_id }),
        (read) => !read.value.running,
      );
      expect(page.value.output_bytes).toBe(12_000);
      expect(page.value).toMatchObject({
        offset: 12_000 - 4096,
        dropped_bytes: 12_000 - 4096,
        next_offset: 12_000,
      });
      expect(page.value.output.endsWith('01999\n02000\n')).toBe(true);
      expect(Buffer.byteLength(page.value.output)).toBe(4096);
    } finally {
      await own.close();
    }
  });

  it('die when their session is idle-killed (reading them counts as activity)', async () => {
    const own = await startServer({ env: { CODEXEC_SESSION_IDLE_TIMEOUT_MS: '3000' } });
    try {
      const marker = sleepMarker();
      const id = (await callTool<{ session_id: string }>(own.client, 'start_session', { language: 'python' }))
        .value.session_id;
      const { value } = await callTool<Info>(own.client, 'start_process', {
        session_id: id,
        command: `sleep ${marker}`,
      });
      // Reads every 0.5 s keep the session for 4 s, past its 3 s idle time (the pauses are the
      // idle time under test).
      for (let i = 0; i < 8; i++) {
        await new Promise((resolve) => setTimeout(resolve, 500));
        const page = await callTool<Page>(own.client, 'read_process_output', {
          process_id: value.process_id,
        });
        expect(page.value.running).toBe(true);
      }
      await until(
        async () => processesWith(marker).length,
        (count) => count === 0,
      );
      // The processes go first, then the session's record: a busy machine may answer between.
      const gone = await until(
        () => callTool<Refusal>(own.client, 'read_process_output', { process_id: value.process_id }),
        (read) => read.isError,
      );
      expect(gone.value.error).toContain('idle_timeout');
    } finally {
      await own.close();
    }
  });

  it('in subprocess mode too (no sandbox ends them), close_session and a crash leave nothing', async () => {
    const own = await startServer({ env: { CODEXEC_SANDBOX_MODE: 'subprocess' } });
    try {
      for (const end of ['close', 'crash'] as const) {
        const marker = sleepMarker();
        const id = (
          await callTool<{ session_id: string }>(own.client, 'start_session', { language: 'python' })
        ).value.session_id;
        // A group of two: the shell and its child.
        await callTool(own.client, 'start_process', {
          session_id: id,
          command: `sleep ${marker} & sleep ${marker}`,
        });
        await until(
          async () => processesWith(marker).length,
          (count) => count === 2,
        );
        if (end === 'close') await callTool(own.client, 'close_session', { session_id: id });
        else
          await callTool(own.client, 'send_to_session', { session_id: id, code: 'import os; os._exit(1)' });
        await until(
          async () => processesWith(marker).length,
          (count) => count === 0,
          5000,
        );
      }
    } finally {
      await own.close();
    }
  });

  it('relays a flood at 2 MiB/s at most, the process waiting on its pipe', async () => {
    const { value } = await start('yes');
    // The rate over a window of time is what is measured: this pause is that window.
    await new Promise((resolve) => setTimeout(resolve, 2000));
    const page = await read(value.process_id, 1e12);
    expect(page.value.running).toBe(true);
    expect(page.value.output_bytes).toBeGreaterThan(64 * 1024);
    // Two windows and a chunk at most (plus one for timing): never the ~30 MB/s it could go.
    expect(page.value.output_bytes).toBeLessThanOrEqual(4 * 2 * 1024 * 1024);
    await call('kill_process', { process_id: value.process_id });
  });

  it.each(['node', 'typescript'])('runs in a %s session too, also while a send awaits', async (language) => {
    const id = await newSession(language);
    const marker = sleepMarker();
    // The cell runs until the test lets it end (a file it waits for), so the process surely
    // starts and ticks while a send awaits.
    const slow = call<{ stdout: string }>('send_to_session', {
      session_id: id,
      code:
        'const fs = await import("node:fs"); fs.writeFileSync("running", "");\n' +
        'while (!fs.existsSync("release")) await new Promise((resolve) => setTimeout(resolve, 20));\n' +
        'console.log("slept")',
    });
    await marked(id, 'running');
    const loop = await start(
      `sleep ${marker} & while true; do echo tick; echo tock >&2; sleep 0.2; done`,
      id,
    );
    expect(loop.isError).toBe(false);
    const ticks = await until(
      () => read(loop.value.process_id),
      (page) => page.value.output.startsWith('tick\ntock\ntick\ntock\n'),
    );
    expect(ticks.value.running).toBe(true);
    writeFileSync(join(dirs.get(id) as string, 'release'), '');
    expect((await slow).value.stdout).toBe('slept\n');
    const cat = (await start('cat; exit 4', id)).value.process_id;
    await call('write_stdin', { process_id: cat, data: 'one\ntwo\n', eof: true });
    const done = await until(
      () => read(cat),
      (page) => !page.value.running,
    );
    expect(done.value).toMatchObject({ output: 'one\ntwo\n', exit_code: 4, signal: null });
    const killed = await call<Info>('kill_process', { process_id: loop.value.process_id });
    expect(killed.value).toMatchObject({ running: false, signal: 'SIGKILL' });
    await until(
      async () => processesWith(marker).length,
      (count) => count === 0,
    );
    await call('close_session', { session_id: id });
  });

  it("runs in a bash session while a cell runs, in the shell's current directory; on a pty too", async () => {
    const id = await newSession('bash');
    await call('send_to_session', { session_id: id, code: 'mkdir -p sub && cd sub' });
    const marker = sleepMarker();
    const slow = call<{ stdout: string }>('send_to_session', {
      session_id: id,
      code: 'touch running; until [ -e release ]; do sleep 0.02; done; echo slept',
    });
    await marked(id, 'running', 'sub');
    const loop = await start(`pwd; sleep ${marker} & while true; do echo tick; sleep 0.2; done`, id);
    expect(loop.isError).toBe(false);
    const ticks = await until(
      () => read(loop.value.process_id),
      (page) => page.value.output.includes('tick\ntick\n'),
    );
    expect(ticks.value.output).toMatch(/\/sub\ntick\n/);
    // Started while the cell ran, not after it: the cell ends only now.
    writeFileSync(join(dirs.get(id) as string, 'sub', 'release'), '');
    expect((await slow).value.stdout).toBe('slept\n');
    const cat = (await start('cat; exit 4', id)).value.process_id;
    await call('write_stdin', { process_id: cat, data: 'one\n', eof: true });
    const done = await until(
      () => read(cat),
      (page) => !page.value.running,
    );
    expect(done.value).toMatchObject({ output: 'one\n', exit_code: 4 });
    // A send's interrupt leaves the process running, as a shell's `cmd &` does.
    const stopped = await call<{ timed_out: boolean }>('send_to_session', {
      session_id: id,
      code: 'sleep 30',
      timeout_ms: 500,
    });
    expect(stopped.value.timed_out).toBe(true);
    expect((await read(loop.value.process_id)).value.running).toBe(true);
    await call('close_session', { session_id: id });
    await until(
      async () => processesWith(marker).length,
      (count) => count === 0,
    );

    const pty = (
      await callTool<{ session_id: string }>(server.client, 'start_session', { language: 'bash', pty: true })
    ).value.session_id;
    const echo = (await start('echo from-pty; [ -t 0 ] || echo no-terminal', pty)).value.process_id;
    const echoed = await until(
      () => read(echo),
      (page) => !page.value.running,
    );
    expect(echoed.value).toMatchObject({ output: 'from-pty\nno-terminal\n', exit_code: 0 });
    await call('close_session', { session_id: pty });
  });

  it("counts against the session's memory limit (CODEXEC_MEMORY_MB)", async () => {
    const own = await startServer({ env: { CODEXEC_MEMORY_MB: '128' } });
    try {
      const id = (await callTool<{ session_id: string }>(own.client, 'start_session', { language: 'python' }))
        .value.session_id;
      const { value } = await callTool<Info>(own.client, 'start_process', {
        session_id: id,
        command: 'exec python3 -c "x = bytearray(400 * 1024 * 1024); print(\'allocated\', flush=True)"',
      });
      const end = await until(
        () => callTool<Page & Refusal>(own.client, 'read_process_output', { process_id: value.process_id }),
        // Killed by the kernel, or its session ended with it: either way not 400 MB.
        (page) => page.isError || !page.value.running,
        20_000,
      );
      if (!end.isError) {
        expect(end.value.output).not.toContain('allocated');
        expect(end.value.exit_code === null ? end.value.signal : end.value.output).toMatch(
          /SIGKILL|MemoryError/,
        );
      } else expect(end.value.error).toContain('its session');
    } finally {
      await own.close();
    }
  });

  it('are gone when the server exits', async () => {
    const own = await startServer();
    const marker = sleepMarker();
    const id = (await callTool<{ session_id: string }>(own.client, 'start_session', { language: 'python' }))
      .value.session_id;
    await callTool(own.client, 'start_process', { session_id: id, command: `sleep ${marker}` });
    await until(
      async () => processesWith(marker).length,
      (count) => count === 1,
    );
    await own.close();
    await until(
      async () => processesWith(marker).length,
      (count) => count === 0,
    );
  });
});

describe('serve --http: background processes belong to their principal', () => {
  it("hides a principal's processes from another, answering as for an unknown id", async () => {
    const dir = tempDir();
    const file = join(dir, 'tokens.json');
    const alice = 'alice-token-0123456789';
    const bob = 'bob-token-0123456789ab';
    writeFileSync(file, JSON.stringify({ alice, bob }));
    const server = await startHttp({ env: { CODEXEC_HTTP_TOKENS: file } });
    try {
      const mine = await connectHttp(server.url, alice, 'modern');
      const other = await connectHttp(server.url, bob, 'legacy');
      const session = (await callTool<{ session_id: string }>(mine, 'start_session', { language: 'python' }))
        .value.session_id;
      const started = await callTool<Info>(mine, 'start_process', { session_id: session, command: 'cat' });
      const id = started.value.process_id;
      const unknown = await callTool<Refusal>(other, 'read_process_output', {
        process_id: 'proc_000000000000',
      });
      for (const [tool, args] of [
        ['read_process_output', { process_id: id }],
        ['write_stdin', { process_id: id, data: 'x', eof: true }],
        ['kill_process', { process_id: id }],
      ] as const) {
        const refused = await callTool<Refusal>(other, tool, args);
        expect(refused.isError, tool).toBe(true);
        expect(refused.value.code, tool).toBe('NOT_FOUND');
        expect(refused.value.error.replace(id, 'ID')).toBe(
          unknown.value.error.replace('proc_000000000000', 'ID'),
        );
      }
      const onTheirs = await callTool<Refusal>(other, 'start_process', {
        session_id: session,
        command: 'true',
      });
      expect(onTheirs.value.code).toBe('SESSION_NOT_FOUND');
      expect((await callTool<{ processes: Info[] }>(other, 'list_processes', {})).value.processes).toEqual(
        [],
      );
      const listed = await callTool<{ processes: Info[] }>(mine, 'list_processes', {});
      expect(listed.value.processes.map((p) => [p.process_id, p.running])).toEqual([[id, true]]);
      await callTool(mine, 'write_stdin', { process_id: id, data: 'still mine\n', eof: true });
      const read = await until(
        () => callTool<Page>(mine, 'read_process_output', { process_id: id }),
        (page) => !page.value.running,
      );
      expect(read.value).toMatchObject({ output: 'still mine\n', exit_code: 0 });
      await Promise.all([mine.close(), other.close()]);
    } finally {
      await server.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
