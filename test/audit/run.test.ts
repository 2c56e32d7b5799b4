// `codexec run` (the real CLI) is audited like execute_code: one entry per attempt, refused ones
// too, in the same signed trail; the key, the anchor and the day files are the owner's alone.
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { baseEnv, CLI, tempDir } from '../helpers/server.js';

const home = tempDir('codexec-run-audit-');
afterAll(() => rmSync(home, { recursive: true, force: true }));

function codexec(args: string[], input = '') {
  const out = spawnSync(process.execPath, [CLI, ...args], {
    input,
    env: baseEnv(home),
    encoding: 'utf8',
    timeout: 60_000,
  });
  return { code: out.status, stdout: out.stdout, stderr: out.stderr };
}

const logs = join(home, 'logs');
const entries = () =>
  readdirSync(logs)
    .filter((name) => /^audit-\d{4}-\d{2}-\d{2}\.jsonl$/.test(name))
    .flatMap((name) => readFileSync(join(logs, name), 'utf8').trimEnd().split('\n'))
    .map((line) => JSON.parse(line));
const mode = (path: string) => statSync(path).mode & 0o777;

describe('codexec run in the audit trail', () => {
  it('leaves one signed entry per run, and one per refused command', () => {
    expect(codexec(['run', '-l', 'bash', '-'], 'echo hi; exit 3')).toMatchObject({ code: 3, stdout: 'hi\n' });
    expect(codexec(['run', '--command', 'sudo id'])).toMatchObject({ code: 2 });
    const [run, refused] = entries();
    expect(run).toMatchObject({
      tool: 'run',
      runtime: 'bash',
      input_code: 'echo hi; exit 3',
      output_summary: 'hi\n',
      exit_code: 3,
      approved: true,
      approved_by: 'operator',
      rule: null,
      principal: 'local',
      prev_hash: '0'.repeat(64),
    });
    expect(run.execution_id).toMatch(/^exec_[0-9a-f]{12}$/);
    expect(run.hmac).toMatch(/^[0-9a-f]{64}$/);
    expect(refused).toMatchObject({
      tool: 'run_command',
      runtime: 'bash',
      input_code: 'sudo id',
      execution_id: null,
      exit_code: null,
      approved: false,
      approved_by: null,
      rule: 'sudo',
      prev_hash: run.hash,
    });
    const verified = codexec(['audit', 'verify']);
    expect(verified).toMatchObject({ code: 0 });
    expect(verified.stdout).toContain('audit chain intact: 2 entries');
  });

  it('keeps the key (32 bytes, outside the log directory), the anchor and the day files at mode 0600', () => {
    const key = join(home, 'audit.key');
    expect(readFileSync(key)).toHaveLength(32);
    expect(readdirSync(logs)).not.toContain('audit.key');
    const head = JSON.parse(readFileSync(join(logs, 'audit-anchor.json'), 'utf8').split('\n')[0] as string);
    expect(head.last).toMatchObject({ count: 2 });
    const days = readdirSync(logs).filter((name) => name.startsWith('audit-2'));
    expect(days).toHaveLength(1);
    for (const path of [key, join(logs, 'audit-anchor.json'), ...days.map((name) => join(logs, name))]) {
      expect([path, mode(path)]).toEqual([path, 0o600]);
    }
  });
});
