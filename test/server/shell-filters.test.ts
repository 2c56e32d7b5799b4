import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { callTool, startServer, type TestServer, tempDir } from '../helpers/server.js';

// The command lists and the built-in rules read a shell line as bash does (a real
// parser), not as one string. Attacks are sent as written; those that would do harm if a filter
// missed them come after `exit 0`, so a miss fails the test without wiping anything.

interface Result {
  success: boolean;
  stdout: string;
  code?: string;
  error?: string;
}

const marker = () => `ran-${Math.random().toString(16).slice(2)}`;

describe('CODEXEC_ALLOWED_COMMANDS applies to every simple command of the line', () => {
  let server: TestServer;
  const run = (command: string) => callTool<Result>(server.client, 'execute_command', { command });
  beforeAll(async () => {
    server = await startServer({ env: { CODEXEC_ALLOWED_COMMANDS: JSON.stringify(['ls.*']) } });
  });
  afterAll(() => server.close());

  it('refuses `ls; id` under ["ls.*"] with COMMAND_BLOCKED naming the stray command', async () => {
    const { isError, value } = await run('ls; id');
    expect(isError).toBe(true);
    expect(value).toMatchObject({ success: false, code: 'COMMAND_BLOCKED' });
    expect(value.error).toContain('`id`');
    expect(value.error).toContain('"ls.*"');
  });

  it.each([
    'ls && touch M',
    'ls || touch M',
    'ls\ntouch M',
    'ls | touch M',
    'ls & touch M',
    'ls $(touch M)',
    'ls "$(touch M)"',
    'ls `touch M`',
    'ls <(touch M)',
    'ls; (touch M)',
    'ls; { touch M; }',
    'ls; if true; then touch M; fi',
    'ls; while touch M; do break; done',
    'ls; for x in 1; do touch M; done',
    'ls; f() { touch M; }; f',
    'ls -la > $(touch M)',
    'ls "unclosed; touch M',
  ])('refuses %j and runs nothing', async (template) => {
    const name = marker();
    const { value } = await run(template.replace('M', name));
    expect(value.code).toBe('COMMAND_BLOCKED');
    expect(existsSync(join(server.home, 'workspace', name))).toBe(false);
  });

  it('says a line it cannot parse is refused because it cannot be checked', async () => {
    const { value } = await run('ls "unclosed');
    expect(value.code).toBe('COMMAND_BLOCKED');
    expect(value.error).toMatch(/cannot parse it.*cannot be checked/);
  });

  it('still runs an allowed line of several allowed commands', async () => {
    const { isError, value } = await run('ls -d . && ls -d .');
    expect(isError).toBe(false);
    expect(value.stdout).toBe('.\n.\n');
  });
});

describe('CODEXEC_BLOCKED_COMMANDS: every simple command, and the pattern shown as written', () => {
  let server: TestServer;
  const run = (command: string) => callTool<Result>(server.client, 'execute_command', { command });
  beforeAll(async () => {
    server = await startServer({
      env: { CODEXEC_BLOCKED_COMMANDS: JSON.stringify(['git\\s+push', 'touch.*']) },
    });
  });
  afterAll(() => server.close());

  it('names the pattern as written: git\\s+push, not its JSON escape', async () => {
    const { value } = await run('git push origin main');
    expect(value.code).toBe('COMMAND_BLOCKED');
    expect(value.error).toContain('"git\\s+push"');
    expect(value.error).not.toContain('\\\\s');
  });

  it.each(['echo x; touch M', 'echo $(touch M)', 'true && "tou"ch M', 'env /usr/bin/touch M'])(
    'refuses %j and runs nothing',
    async (template) => {
      const name = marker();
      const { value } = await run(template.replace('M', name));
      expect(value.code).toBe('COMMAND_BLOCKED');
      expect(existsSync(join(server.home, 'workspace', name))).toBe(false);
    },
  );

  it('checks a line it cannot parse as a whole', async () => {
    expect((await run('touch "x')).value.code).toBe('COMMAND_BLOCKED');
    expect((await run('echo "x')).value.code).not.toBe('COMMAND_BLOCKED'); // bash's own error
  });
});

const ATTACKS: ReadonlyArray<[string, string]> = [
  ['r""m -rf /', 'rm-rf-root'],
  ["$'\\x72\\x6d' -rf /", 'rm-rf-root'],
  ['\\rm -rf /', 'rm-rf-root'],
  ['command rm -rf /', 'rm-rf-root'],
  ['env rm -rf /', 'rm-rf-root'],
  ['/bin/rm -rf /', 'rm-rf-root'],
  ['rm -rf //', 'rm-rf-root'],
  [`bash -c 'r""m -rf /'`, 'rm-rf-root'],
  ["s''udo id", 'sudo'],
  ['command sudo id', 'sudo'],
  ['find / -delete', 'find-root-delete'],
  ['dd if=/dev/zero of=file', 'dd'],
];
const HARMLESS = ['rm -rf ./build', 'echo "sudo"', 'grep rm file', 'find . -name x'];

describe('built-in rules see through quoting, escapes and paths', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startServer();
  });
  afterAll(() => server.close());

  it.each(ATTACKS)('execute_command refuses %s: COMMAND_BLOCKED naming rule %s', async (attack, rule) => {
    const { isError, value } = await callTool<Result>(server.client, 'execute_command', {
      command: `exit 0\n${attack}`,
    });
    expect(isError).toBe(true);
    expect(value).toMatchObject({ success: false, code: 'COMMAND_BLOCKED' });
    expect(value.error).toContain(`rule ${rule}:`);
  });

  it.each(ATTACKS)('execute_code (bash) refuses %s: POLICY_DENIED naming rule %s', async (attack, rule) => {
    const { isError, value } = await callTool<Result>(server.client, 'execute_code', {
      language: 'bash',
      code: `exit 0\n${attack}`,
    });
    expect(isError).toBe(true);
    expect(value).toMatchObject({ success: false, code: 'POLICY_DENIED' });
    expect(value.error).toContain(`rule ${rule}:`);
  });

  it.each(HARMLESS)('runs the harmless %s', async (line) => {
    const command = await callTool<Result>(server.client, 'execute_command', { command: line });
    expect(command.isError, command.value.error).toBe(false);
    const code = await callTool<Result>(server.client, 'execute_code', { language: 'bash', code: line });
    expect(code.isError, code.value.error).toBe(false);
  });
});

describe('dd is denied as AG2 does, and policy.json can allow it', () => {
  it('runs dd if=/dev/zero of=file once policy.json says {"rules": {"dd": "allow"}}', async () => {
    const home = tempDir();
    writeFileSync(join(home, 'policy.json'), JSON.stringify({ rules: { dd: 'allow' } }));
    const server = await startServer({ home });
    try {
      const run = (command: string) => callTool<Result>(server.client, 'execute_command', { command });
      const allowed = await run('dd if=/dev/zero of=file bs=1 count=3 && wc -c < file');
      expect(allowed.isError, allowed.value.error).toBe(false);
      expect(allowed.value.stdout).toBe('3\n');
      // a device write is still refused by its own rule
      const device = await run('exit 0\ndd if=/dev/zero of=/dev/sda');
      expect(device.value.code).toBe('COMMAND_BLOCKED');
      expect(device.value.error).toContain('rule dd-device:');
    } finally {
      await server.close();
    }
  });
});
