// drivers/pty_relay.py on its own, unsandboxed: what the server cannot show yet (session stdin is
// ended at start, so input to a pty session's terminal has no tool) and the exit it passes on.
import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { PTY_RELAY } from '../../src/sessions/pty.js';

interface Ran {
  stdout: string;
  code: number | null;
  signal: NodeJS.Signals | null;
}

/** Run `script` by bash under the relay, `input` on the relay's stdin (then kept open `holdMs`). */
function relay(script: string, input = '', holdMs = 0, extra: string[] = []): Promise<Ran> {
  const child = spawn('python3', [PTY_RELAY, ...extra, '--', '/bin/bash', '-c', script], {
    stdio: ['pipe', 'pipe', 'inherit', 'pipe'],
  });
  const { stdin, stdout: out } = child;
  if (!stdin || !out) throw new Error('spawn gave no pipes');
  let stdout = '';
  out.on('data', (chunk: Buffer) => {
    stdout += chunk.toString('utf8');
  });
  stdin.write(input);
  const ended = setTimeout(() => stdin.end(), holdMs);
  return new Promise((resolve) => {
    child.on('close', (code, signal) => {
      clearTimeout(ended);
      resolve({ stdout, code, signal });
    });
  });
}

describe('pty_relay.py', () => {
  it('relays its stdin to the terminal, without echo, and the output with \\n line ends', async () => {
    const ran = await relay(
      'read -r a; read -r b; echo "got $a and $b"; [ -t 0 ] && echo tty',
      'one\ntwo\n',
      5000,
    );
    expect(ran).toMatchObject({ stdout: 'got one and two\ntty\n', code: 0 });
  });

  it('hands a program a terminal as its controlling terminal, in a session of its own', async () => {
    const ran = await relay('[ "$(ps -o sid= -p $$)" -eq $$ ] && echo leader; exec 9</dev/tty && echo ctty');
    expect(ran.stdout).toBe('leader\nctty\n');
  });

  it('passes fd 3 through to the program and leaves it to it', async () => {
    const child = spawn('python3', [PTY_RELAY, '--', '/bin/bash', '-c', 'echo through >&3'], {
      stdio: ['ignore', 'ignore', 'inherit', 'pipe'],
    });
    let said = '';
    child.stdio[3]?.on('data', (chunk: Buffer) => {
      said += chunk.toString('utf8');
    });
    // The channel ends when the program ends: the relay holds no copy of it.
    await new Promise((resolve) => child.stdio[3]?.on('end', resolve));
    expect(said).toBe('through\n');
  });

  it("exits with the program's status, or dies of its signal", async () => {
    expect((await relay('echo bye; exit 4')).code).toBe(4);
    expect(await relay('kill -TERM $$')).toMatchObject({ code: null, signal: 'SIGTERM' });
  });

  it('passes SIGINT on to the program with --forward-signals, and ignores it without', async () => {
    const trapped = 'trap "echo interrupted; exit 7" INT; echo ready; while :; do sleep 0.05; done';
    for (const [flags, expected] of [
      [['--forward-signals'], 7],
      [[], null],
    ] as const) {
      const child = spawn('python3', [PTY_RELAY, ...flags, '--', '/bin/bash', '-c', trapped], {
        stdio: ['ignore', 'pipe', 'inherit'],
      });
      let stdout = '';
      const ready = new Promise<void>((resolve) =>
        child.stdout.on('data', (chunk: Buffer) => {
          stdout += chunk.toString('utf8');
          if (stdout.includes('ready')) resolve();
        }),
      );
      const closed = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
      await ready;
      child.kill('SIGINT'); // the relay alone, as a process group's signal reaches it
      const outcome = await Promise.race([closed, new Promise((resolve) => setTimeout(resolve, 1500))]);
      if (expected === null) {
        expect(outcome, 'the relay ignored it and the program runs on').toBeUndefined();
        child.kill('SIGKILL');
        await closed;
      } else expect(outcome).toBe(expected);
    }
  });
});
