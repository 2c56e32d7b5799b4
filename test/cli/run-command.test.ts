import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { baseEnv, CLI, tempDir } from '../helpers/server.js';

const home = tempDir();
afterAll(() => rmSync(home, { recursive: true, force: true }));

function codexec(args: string[], env: Record<string, string> = {}) {
  const out = spawnSync(process.execPath, [CLI, ...args], {
    input: '',
    env: { ...baseEnv(home), ...env },
    encoding: 'utf8',
    timeout: 30_000,
  });
  return { code: out.status, stdout: out.stdout, stderr: out.stderr };
}

describe('codexec run --command', () => {
  it('runs a command line in the command workspace, streams output and passes the exit code through', () => {
    const first = codexec(['run', '--command', 'echo kept > state.txt; echo hello; exit 7']);
    expect(first).toMatchObject({ code: 7, stdout: 'hello\n' });
    const second = codexec(['run', '--command', 'cat state.txt']);
    expect(second).toMatchObject({ code: 0, stdout: 'kept\n' });
  });

  it('prints the execute_command result with --json, honouring -C as work_dir', () => {
    codexec(['run', '--command', 'mkdir -p sub']);
    const { code, stdout } = codexec(['run', '--json', '-C', 'sub', '--command', 'pwd']);
    expect(code).toBe(0);
    const result = JSON.parse(stdout);
    expect(result).toMatchObject({ success: true, exit_code: 0, venv: null });
    expect(result.stdout).toBe(`${result.work_dir}\n`);
    expect(result.work_dir.endsWith('/workspace/sub')).toBe(true);
    expect(typeof result.execution_time).toBe('number');
  });

  it('applies the command lists (exit 2, nothing run) and logs what ran', () => {
    const refused = codexec(['run', '--command', 'git push'], { CODEXEC_BLOCKED_COMMANDS: '["git.*"]' });
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain('COMMAND_BLOCKED');
    const logs = readdirSync(join(home, 'logs')).filter((name) => name.startsWith('executions-'));
    const text = logs.map((name) => readFileSync(join(home, 'logs', name), 'utf8')).join('');
    expect(text).toContain('"tool":"execute_command"');
    expect(text).toContain('"code":"cat state.txt"');
    expect(text).not.toContain('git push');
  });

  it('refuses a file and --command together', () => {
    const { code, stderr } = codexec(['run', 'x.py', '--command', 'true']);
    expect(code).toBe(2);
    expect(stderr).toContain('not both');
  });
});
