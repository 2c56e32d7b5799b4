import { spawnSync } from 'node:child_process';
import { existsSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { baseEnv, CLI, callTool, startServer, type TestServer, tempDir } from '../helpers/server.js';

interface Result {
  success: boolean;
  stdout: string;
  work_dir: string;
  code?: string;
  error?: string;
}

/** Run `command` in a fresh-named marker's presence: true when it ran (the marker file exists). */
async function ranOrRefused(server: TestServer, command: string) {
  const marker = `ran-${Math.random().toString(16).slice(2)}`;
  const { isError, value } = await callTool<Result>(server.client, 'execute_command', {
    command: `touch ${marker}; ${command}`,
  });
  const ran = existsSync(join(server.home, 'workspace', marker));
  return { isError, value, ran };
}

/** The marker is touched first, so the list allows that `touch`: each simple command must match one pattern. */
describe('CODEXEC_ALLOWED_COMMANDS (re.match: anchored at the start only)', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startServer({
      env: {
        CODEXEC_ALLOWED_COMMANDS: JSON.stringify(['touch ran-[0-9a-f]+', '(echo|true)\\b.*', 'pwd|ls']),
      },
    });
  });
  afterAll(() => server.close());

  it('runs a command matching an allowed pattern from its start', async () => {
    const { isError, ran, value } = await ranOrRefused(server, 'echo allowed');
    expect(isError).toBe(false);
    expect(ran).toBe(true);
    expect(value.stdout).toBe('allowed\n');
  });

  it('refuses a command matching no pattern with COMMAND_BLOCKED naming the patterns, and runs nothing', async () => {
    const { isError, ran, value } = await ranOrRefused(server, 'cat /etc/hostname');
    expect(isError).toBe(true);
    expect(ran).toBe(false);
    expect(value).toMatchObject({ success: false, code: 'COMMAND_BLOCKED' });
    expect(value.error).toContain('CODEXEC_ALLOWED_COMMANDS');
    expect(value.error).toContain('pwd|ls');
  });

  it('anchors at the start only: a match later in the line does not count, trailing text is free', async () => {
    const run = (command: string) => callTool<Result>(server.client, 'execute_command', { command });
    expect((await run('ls -la')).isError).toBe(false); // trailing text after `ls` is fine
    expect((await run('pwd')).isError).toBe(false);
    const later = await run('cat x; pwd'); // pwd appears, but not at the start
    expect(later.value.code).toBe('COMMAND_BLOCKED');
    // the group keeps an alternation anchored as a whole: `pwd|ls` is ^(?:pwd|ls), not ^pwd|ls
    expect((await run('cat ls')).value.code).toBe('COMMAND_BLOCKED');
  });
});

describe('CODEXEC_BLOCKED_COMMANDS and the "pytest.*" / "pytest .*" trap', () => {
  let server: TestServer;
  const run = (command: string) => callTool<Result>(server.client, 'execute_command', { command });
  beforeAll(async () => {
    server = await startServer({
      env: { CODEXEC_BLOCKED_COMMANDS: JSON.stringify(['git push.*', 'pytest .*']) },
    });
  });
  afterAll(() => server.close());

  it('refuses a command matching a blocked pattern from its start, naming the pattern', async () => {
    const { isError, value } = await run('git push origin main');
    expect(isError).toBe(true);
    expect(value).toMatchObject({ success: false, code: 'COMMAND_BLOCKED' });
    expect(value.error).toContain('"git push.*"');
    expect(value.error).toContain('CODEXEC_BLOCKED_COMMANDS');
  });

  it('does not refuse a blocked word that is not at the start (re.match, not re.search)', async () => {
    const { isError, value } = await run('echo git push');
    expect(isError).toBe(false);
    expect(value.stdout).toBe('git push\n');
  });

  it('"pytest .*" blocks "pytest -v" but misses a bare "pytest" (use "pytest.*")', async () => {
    expect((await run('pytest -v')).value.code).toBe('COMMAND_BLOCKED');
    const bare = await run('pytest');
    expect(bare.isError).toBe(false); // it ran (and failed: no pytest here, or no tests)
  });
});

describe('command lists: absent vs empty, and validation at start-up', () => {
  it('an empty allowlist allows no command at all', async () => {
    const server = await startServer({ env: { CODEXEC_ALLOWED_COMMANDS: '[]' } });
    try {
      const { isError, ran, value } = await ranOrRefused(server, 'true');
      expect(isError).toBe(true);
      expect(ran).toBe(false);
      expect(value.code).toBe('COMMAND_BLOCKED');
      expect(value.error).toContain('empty');
    } finally {
      await server.close();
    }
  });

  it('takes the lists from config.json as arrays', async () => {
    const home = tempDir();
    writeFileSync(join(home, 'config.json'), JSON.stringify({ CODEXEC_BLOCKED_COMMANDS: ['curl.*'] }));
    const server = await startServer({ home });
    try {
      const { value } = await callTool<Result>(server.client, 'execute_command', { command: 'curl x' });
      expect(value.code).toBe('COMMAND_BLOCKED');
    } finally {
      await server.close();
      rmSync(home, { recursive: true, force: true });
    }
  });

  it.each([
    [
      'CODEXEC_ALLOWED_COMMANDS',
      '["python.*", "(unclosed"]',
      /CODEXEC_ALLOWED_COMMANDS: pattern 2 "\(unclosed" is not a valid regular expression/,
    ],
    ['CODEXEC_BLOCKED_COMMANDS', 'rm.*', /CODEXEC_BLOCKED_COMMANDS: expected a JSON array/],
    ['CODEXEC_BLOCKED_COMMANDS', '["a)(b"]', /CODEXEC_BLOCKED_COMMANDS: pattern 1/],
    ['CODEXEC_ALLOWED_PATHS', 'relative/dir', /CODEXEC_ALLOWED_PATHS: every path must be absolute/],
  ])('stops start-up on an invalid %s (%s)', (name, value, message) => {
    const home = tempDir();
    try {
      const out = spawnSync(process.execPath, [CLI, 'serve'], {
        env: { ...baseEnv(home), [name]: value },
        input: '',
        encoding: 'utf8',
        timeout: 30_000,
      });
      expect(out.status).not.toBe(0);
      expect(out.stderr).toMatch(message);
    } finally {
      rmSync(home, { recursive: true, force: true });
    }
  });
});

describe('sanitization: the built-in dangerous-command rules refuse execute_command', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startServer();
  });
  afterAll(() => server.close());

  it.each([
    ['rm -rf /', 'rm -rf /'],
    ['dd to a disk', 'dd if=/dev/zero of=/dev/sda bs=1M count=1'],
    ['a fork bomb', ':(){ :|:& };:'],
    ['a write to /dev/sd*', 'echo x > /dev/sda'],
    ['a move to /dev/null', 'mv file /dev/null'],
    ['sudo', 'sudo ls'],
    ['su', 'su root -c id'],
    ['chmod', 'chmod 777 file'],
    ['chown', 'chown root file'],
  ])('refuses %s with COMMAND_BLOCKED naming the rule, and runs nothing', async (_what, command) => {
    // The command alone (no marker prefix: rules may anchor at the start): its workspace is checked.
    const marker = `ran-${Math.random().toString(16).slice(2)}`;
    const { isError, value } = await callTool<Result>(server.client, 'execute_command', {
      command: `${command}; touch ${marker}`,
    });
    expect(isError).toBe(true);
    expect(value).toMatchObject({ success: false, code: 'COMMAND_BLOCKED' });
    expect(value.error).toMatch(/rule/);
    expect(existsSync(join(server.home, 'workspace', marker))).toBe(false);
  });
});
