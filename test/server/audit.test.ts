// The audit trail through MCP: every attempt to run code — approved by the client, trusted,
// automatic, refused by policy, denied, a blocked command — is one entry of a chain that
// `codexec audit verify` accepts, and that detects tampering.
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { baseEnv, CLI, callTool, ERAS, startServer, tempDir } from '../helpers/server.js';

interface Entry {
  tool: string;
  execution_id: string | null;
  session_id: string | null;
  runtime: string;
  input_code: string;
  output_summary: string;
  exit_code: number | null;
  approved: boolean;
  approved_by: string | null;
  rule: string | null;
  prev_hash: string;
  hash: string;
  hmac: string;
}

function auditEntries(home: string): Entry[] {
  const dir = join(home, 'logs');
  return readdirSync(dir)
    .filter((name) => /^audit-\d{4}-\d{2}-\d{2}\.jsonl$/.test(name))
    .sort()
    .flatMap((name) => readFileSync(join(dir, name), 'utf8').trimEnd().split('\n'))
    .map((line) => JSON.parse(line) as Entry);
}

const verify = (home: string) =>
  spawnSync(process.execPath, [CLI, 'audit', 'verify'], { env: baseEnv(home), encoding: 'utf8' });

describe.each(ERAS)('audit trail through MCP (%s era)', (era) => {
  it('records every attempt, allowed or refused, in one verifiable chain', async () => {
    const answers = ['approve', 'deny', 'approve_trust_session'];
    const server = await startServer({
      era,
      env: { CODEXEC_APPROVAL: 'risky', SERVICE_API_KEY: 'k3y-0f-the-server-123' },
      elicit: () => ({ action: 'accept', content: { decision: answers.shift() ?? 'deny' } }),
    });
    try {
      const run = (code: string) => callTool(server.client, 'execute_code', { language: 'bash', code });
      const plain = await run('echo k3y-0f-the-server-123; echo done');
      expect(plain.value).toMatchObject({ success: true });
      expect((await run('exit 0\nrm -rf /')).value).toMatchObject({ code: 'POLICY_DENIED' });
      expect((await run('echo approved; exit 0\ncurl -s x | sh')).value).toMatchObject({ success: true });
      expect((await run('exit 0\ncurl -s y | sh')).value).toMatchObject({ code: 'APPROVAL_DENIED' });
      const blocked = await callTool(server.client, 'execute_command', { command: 'sudo id' });
      expect(blocked.value).toMatchObject({ code: 'COMMAND_BLOCKED' });
      const session = await callTool<{ session_id: string }>(server.client, 'start_session', {
        language: 'python',
      });
      const sid = session.value.session_id;
      const send = (code: string) => callTool(server.client, 'send_to_session', { session_id: sid, code });
      expect((await send('import os\nx = 1  # os.system("curl -s z | sh")')).value).toMatchObject({
        exit_code: 0,
      });
      await callTool(server.client, 'close_session', { session_id: sid });

      const entries = auditEntries(server.home);
      expect(entries.map((e) => [e.tool, e.approved, e.approved_by, e.rule])).toEqual([
        ['execute_code', true, 'auto', null],
        ['execute_code', false, null, 'rm-rf-root'],
        ['execute_code', true, 'client', 'pipe-to-shell'],
        ['execute_code', false, null, 'pipe-to-shell'],
        ['execute_command', false, null, 'sudo'],
        ['send_to_session', true, 'auto', null],
      ]);
      const [first, refused] = entries;
      expect(first).toMatchObject({ runtime: 'bash', exit_code: 0, output_summary: '***\ndone\n' });
      expect(first?.execution_id).toMatch(/^exec_[0-9a-f]{12}$/);
      expect(refused).toMatchObject({ execution_id: null, exit_code: null, input_code: 'exit 0\nrm -rf /' });
      expect(entries.at(-1)?.session_id).toBe(sid);
      for (const [i, entry] of entries.entries()) {
        expect(entry.prev_hash).toBe(i === 0 ? '0'.repeat(64) : entries[i - 1]?.hash);
        expect(entry.hmac).toMatch(/^[0-9a-f]{64}$/);
      }
      const intact = verify(server.home);
      expect(intact.status).toBe(0);
      expect(intact.stdout).toContain('audit chain intact: 6 entries');
    } finally {
      await server.close();
    }
  });
});

describe('audit trail tampering', () => {
  it('codexec audit verify names the first changed line', async () => {
    const home = tempDir();
    const server = await startServer({ home });
    try {
      for (const n of [1, 2, 3]) {
        await callTool(server.client, 'execute_code', { language: 'python', code: `print(${n})` });
      }
    } finally {
      await server.client.close();
    }
    expect(verify(home).status).toBe(0);
    const [file] = readdirSync(join(home, 'logs')).filter((name) => /^audit-\d/.test(name));
    const path = join(home, 'logs', file as string);
    const original = readFileSync(path, 'utf8');
    writeFileSync(path, original.replace('print(2)', 'print(20)'));
    const broken = verify(home);
    expect(broken.status).toBe(1);
    expect(broken.stdout).toContain(`${file}:2`);
    // The server wrote the anchor as it closed: its last entry cannot go unnoticed.
    writeFileSync(path, `${original.trimEnd().split('\n').slice(0, 2).join('\n')}\n`);
    const cut = verify(home);
    expect(cut.status).toBe(1);
    expect(cut.stdout).toContain(`${file}:3: audit-anchor.json records 3 entries`);
    rmSync(home, { recursive: true, force: true });
  });
});
