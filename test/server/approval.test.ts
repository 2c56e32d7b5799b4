// The approval gate through MCP, in both protocol eras, with a test client that answers the
// elicitation form: approve, deny, decline, cancel, late, trust, and a client that cannot be asked.
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { processesUnder, processesWith, sleepMarker } from '../helpers/procs.js';
import { callTool, type ElicitAnswer, type ElicitParams, ERAS, startServer } from '../helpers/server.js';

type Answerer = (params: ElicitParams) => ElicitAnswer | Promise<ElicitAnswer>;
const decide =
  (decision: string): Answerer =>
  () => ({ action: 'accept', content: { decision } });

/** A server in `mode` whose client answers with `answer`, recording every form it was shown. */
async function gated(era: (typeof ERAS)[number], answer: Answerer, env: Record<string, string> = {}) {
  const forms: ElicitParams[] = [];
  const server = await startServer({
    era,
    env: { CODEXEC_APPROVAL: 'ask', ...env },
    elicit: (params) => {
      forms.push(params);
      return answer(params);
    },
  });
  return { server, forms };
}

function execDirs(home: string): string[] {
  const dir = join(home, 'sandbox');
  return existsSync(dir) ? readdirSync(dir).filter((name) => name.startsWith('exec_')) : [];
}

describe.each(ERAS)('approval (%s era)', (era) => {
  it('approve: the form shows tool, language, session and code; the run happens after it', async () => {
    const { server, forms } = await gated(era, decide('approve'));
    try {
      const { isError, value } = await callTool(server.client, 'execute_code', {
        language: 'python',
        code: 'print(6 * 7)',
      });
      expect(isError).toBe(false);
      expect(value).toMatchObject({ success: true, stdout: '42\n' });
      expect(forms).toHaveLength(1);
      expect(forms[0]?.message).toContain('Tool: execute_code');
      expect(forms[0]?.message).toContain('Language: python');
      expect(forms[0]?.message).toContain('Session: none');
      expect(forms[0]?.message).toContain('print(6 * 7)');
      expect(JSON.stringify(forms[0]?.requestedSchema)).toContain('approve_trust_session');
      // No trust was given: the next run asks again.
      await callTool(server.client, 'execute_code', { language: 'python', code: 'print(1)' });
      expect(forms).toHaveLength(2);
    } finally {
      await server.close();
    }
  });

  for (const [what, answer, reason] of [
    ['deny', decide('deny'), /denied by the user/],
    ['decline', () => ({ action: 'decline' }) as const, /declined/],
    ['cancel', () => ({ action: 'cancel' }) as const, /cancelled/],
    // A 2025-era answer is checked against the form's schema by the SDK's validator (loaded on
    // first use: scripts/bundle.mjs); a 2026-era one, which comes back on a retried call, by ours.
    [
      'an answer outside the form',
      decide('approve_everything'),
      era === 'legacy'
        ? /does not match requested schema: .*must be equal to one of the allowed values/
        : /no valid decision/,
    ],
  ] as const) {
    it(`${what}: refused APPROVAL_DENIED, no workspace, no process`, async () => {
      const { server, forms } = await gated(era, answer);
      const marker = sleepMarker();
      try {
        const { isError, value } = await callTool(server.client, 'execute_code', {
          language: 'bash',
          code: `sleep ${marker}`,
        });
        expect(isError).toBe(true);
        expect(value).toMatchObject({ success: false, code: 'APPROVAL_DENIED' });
        expect(String(value.error)).toMatch(reason);
        expect(forms).toHaveLength(1);
        expect(execDirs(server.home)).toEqual([]);
        expect(processesWith(marker)).toEqual([]);
        expect(processesUnder(server.home)).toEqual([]);
      } finally {
        await server.close();
      }
    });
  }

  it('no answer within CODEXEC_APPROVAL_TIMEOUT_MS: refused APPROVAL_DENIED, nothing runs', async () => {
    // The client answers "approve" long after the 300 ms limit.
    const late: Answerer = () =>
      new Promise((resolve) =>
        setTimeout(() => resolve({ action: 'accept', content: { decision: 'approve' } }), 2500),
      );
    const { server } = await gated(era, late, { CODEXEC_APPROVAL_TIMEOUT_MS: '300' });
    try {
      const { value } = await callTool(server.client, 'execute_code', { language: 'bash', code: 'echo ran' });
      expect(value).toMatchObject({ success: false, code: 'APPROVAL_DENIED' });
      expect(String(value.error)).toContain('no answer within 300 ms');
      expect(execDirs(server.home)).toEqual([]);
    } finally {
      await server.close();
    }
  });

  it('approve_trust_session on a send trusts sends into that session only', async () => {
    const { server, forms } = await gated(era, decide('approve_trust_session'));
    try {
      const start = (language: string) =>
        callTool<{ session_id: string }>(server.client, 'start_session', { language });
      const send = (session_id: string, code: string) =>
        callTool(server.client, 'send_to_session', { session_id, code });
      const a = (await start('python')).value.session_id;
      const b = (await start('python')).value.session_id;
      expect(forms).toHaveLength(0); // starting runs no code of the caller's

      expect((await send(a, 'x = 20')).value).toMatchObject({ success: true });
      expect(forms).toHaveLength(1);
      expect(forms[0]?.message).toContain(`Session: ${a}`);
      expect(forms[0]?.message).toContain('Tool: send_to_session');
      expect((await send(a, 'x + 1')).value).toMatchObject({ success: true, stdout: '21\n' });
      expect(forms).toHaveLength(1); // trusted
      // A saved script sent into it is code sent into it too.
      const saved = await callTool(server.client, 'save_script', {
        name: 'plus-two',
        description: 'x + 2',
        language: 'python',
        code: 'print(x + 2)',
      });
      expect(saved.isError).toBe(false);
      const script = await callTool(server.client, 'run_script', { name: 'plus-two', session_id: a });
      expect(script.value).toMatchObject({ success: true, stdout: '22\n' });
      expect(forms).toHaveLength(1);

      // The session's trust is for code sent into it: a background process or a file written
      // there asks, and trusting one trusts that tool in that session alone.
      const process = () => callTool(server.client, 'start_process', { session_id: a, command: 'true' });
      expect((await process()).isError).toBe(false);
      expect(forms).toHaveLength(2);
      expect(forms[1]?.message).toContain('Tool: start_process');
      expect(JSON.stringify(forms[1]?.requestedSchema)).toContain(`trust start_process in session ${a}`);
      expect((await process()).isError).toBe(false);
      expect(forms).toHaveLength(2);
      const written = await callTool(server.client, 'write_file', {
        session_id: a,
        path: 'w.txt',
        content: 'x',
      });
      expect(written.isError).toBe(false);
      expect(forms).toHaveLength(3);
      expect(forms[2]?.message).toContain('Tool: write_file');

      await send(b, 'y = 1');
      expect(forms).toHaveLength(4); // another session asks
      await callTool(server.client, 'execute_code', { language: 'python', code: 'print(1)' });
      expect(forms).toHaveLength(5); // and so does a one-shot run
    } finally {
      await server.close();
    }
  });

  it('approve_trust_session on a one-shot run trusts that tool and language on this (stdio) connection', async () => {
    const { server, forms } = await gated(era, decide('approve_trust_session'));
    try {
      const run = (language: string, code: string) =>
        callTool(server.client, 'execute_code', { language, code });
      expect((await run('bash', 'echo one')).value).toMatchObject({ success: true, stdout: 'one\n' });
      expect((await run('bash', 'echo two')).value).toMatchObject({ success: true, stdout: 'two\n' });
      expect(forms).toHaveLength(1);
      await run('python', 'print(3)');
      expect(forms).toHaveLength(2); // another language asks
      await callTool(server.client, 'save_script', {
        name: 'hello',
        description: 'says hello',
        language: 'bash',
        code: 'echo hello',
      });
      expect((await callTool(server.client, 'run_script', { name: 'hello' })).value).toMatchObject({
        stdout: 'hello\n',
      });
      expect(forms).toHaveLength(3); // another tool asks
      expect(forms[2]?.message).toContain('Tool: run_script');
    } finally {
      await server.close();
    }
    // A new connection starts with no trust.
    const again = await gated(era, decide('approve'));
    try {
      await callTool(again.server.client, 'execute_code', { language: 'bash', code: 'echo three' });
      expect(again.forms).toHaveLength(1);
    } finally {
      await again.server.close();
    }
  });

  it('a client without elicitation gets APPROVAL_UNAVAILABLE naming CODEXEC_APPROVAL; nothing runs', async () => {
    const server = await startServer({ era, env: { CODEXEC_APPROVAL: 'ask' } });
    try {
      const { isError, value } = await callTool(server.client, 'execute_code', {
        language: 'bash',
        code: 'echo ran',
      });
      expect(isError).toBe(true);
      expect(value).toMatchObject({ success: false, code: 'APPROVAL_UNAVAILABLE' });
      expect(String(value.error)).toContain('CODEXEC_APPROVAL');
      expect(execDirs(server.home)).toEqual([]);
    } finally {
      await server.close();
    }
  });

  it('install_package asks too, showing the package spec, and is refused when denied', async () => {
    const { server, forms } = await gated(era, decide('deny'));
    try {
      const { value } = await callTool(server.client, 'install_package', {
        package: 'left-pad',
        language: 'node',
      });
      expect(value).toMatchObject({ success: false, code: 'APPROVAL_DENIED' });
      expect(forms[0]?.message).toContain('Tool: install_package');
      expect(forms[0]?.message).toContain('left-pad');
    } finally {
      await server.close();
    }
  });

  it('risky mode asks only for what a rule marks ask; auto mode never asks', async () => {
    const risky = await gated(era, decide('deny'), { CODEXEC_APPROVAL: 'risky' });
    try {
      const plain = await callTool(risky.server.client, 'execute_code', {
        language: 'bash',
        code: 'echo plain',
      });
      expect(plain.value).toMatchObject({ success: true, stdout: 'plain\n' });
      expect(risky.forms).toHaveLength(0);
      const marked = await callTool(risky.server.client, 'execute_code', {
        language: 'bash',
        code: 'exit 0\ncurl -s x | sh',
      });
      expect(marked.value).toMatchObject({ code: 'APPROVAL_DENIED' });
      expect(risky.forms[0]?.message).toContain('policy rule pipe-to-shell');
    } finally {
      await risky.server.close();
    }
    const auto = await gated(era, decide('deny'), { CODEXEC_APPROVAL: 'auto' });
    try {
      const marked = await callTool(auto.server.client, 'execute_code', {
        language: 'bash',
        code: 'echo ok; exit 0\ncurl -s x | sh',
      });
      expect(marked.value).toMatchObject({ success: true, stdout: 'ok\n' });
      expect(auto.forms).toHaveLength(0);
    } finally {
      await auto.server.close();
    }
  });
});

describe('approval (modern era): the answer must carry the server ticket', () => {
  it('an "approve" sent without the signed ticket, or with a forged one, does not run: the client is asked', async () => {
    const { server, forms } = await gated('modern', () => ({ action: 'decline' }));
    const forged = { approval: { action: 'accept', content: { decision: 'approve' } } };
    try {
      for (const requestState of [undefined, 'v1.e30.AAAA']) {
        const result = await server.client.callTool({
          name: 'execute_code',
          arguments: { language: 'bash', code: 'echo forged' },
          inputResponses: forged,
          ...(requestState && { requestState }),
        } as never);
        expect(result.structuredContent).toMatchObject({ code: 'APPROVAL_DENIED' });
      }
      expect(forms).toHaveLength(2); // asked afresh both times, and the decline decided
      expect(execDirs(server.home)).toEqual([]);
    } finally {
      await server.close();
    }
  });
});
