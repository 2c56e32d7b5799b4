// A fixed hole: under CODEXEC_APPROVAL=ask, write_file once planted `.packages/python/statistics.py`
// unasked, and it shadowed the standard library inside a cell the user then approved. write_file
// now asks as code does, and installed packages come after the standard library.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { callTool, type ElicitParams, ERAS, startServer, tempDir } from '../helpers/server.js';
import { buildWheel } from '../packages/fixtures.js';

type Value = Record<string, unknown> & {
  code?: string;
  stdout?: string;
  stderr?: string;
  working_dir?: string;
};

describe.each(ERAS)('write_file under CODEXEC_APPROVAL=ask (%s era)', (era) => {
  it('asks showing path, size and first lines; denied writes nothing, approved writes', async () => {
    const forms: ElicitParams[] = [];
    let answer = 'deny';
    const server = await startServer({
      era,
      env: { CODEXEC_APPROVAL: 'ask' },
      elicit: (params) => {
        forms.push(params);
        return { action: 'accept', content: { decision: answer } };
      },
    });
    try {
      const session = await callTool<Value>(server.client, 'start_session', { language: 'python' });
      const id = String(session.value.session_id);
      const dir = String(session.value.working_dir);
      const args = { session_id: id, path: 'plan.txt', content: 'first line\nsecond line\n' };
      const denied = await callTool<Value>(server.client, 'write_file', args);
      expect(denied.value).toMatchObject({ success: false, code: 'APPROVAL_DENIED' });
      expect(existsSync(join(dir, 'plan.txt'))).toBe(false);
      const form = forms.find((f) => f.message.includes('Tool: write_file'));
      expect(form?.message).toContain('plan.txt');
      expect(form?.message).toContain('23 bytes');
      expect(form?.message).toContain('first line');
      answer = 'approve';
      const written = await callTool<Value>(server.client, 'write_file', args);
      expect(written.value).toMatchObject({ success: true, bytes: 23 });
      expect(existsSync(join(dir, 'plan.txt'))).toBe(true);
    } finally {
      await server.close();
    }
  });
});

describe('installed packages never shadow the standard library', () => {
  it('a statistics.py in the session packages loses to the standard library; other modules there still import', async () => {
    const wheels = tempDir('codexec-wheels-');
    buildWheel(wheels, 'statistics', '9.9.9', 13);
    const server = await startServer({ env: { PIP_NO_INDEX: '1', PIP_FIND_LINKS: wheels } });
    try {
      const session = await callTool<Value>(server.client, 'start_session', { language: 'python' });
      const id = String(session.value.session_id);
      for (const [path, content] of [
        ['.packages/python/statistics.py', 'raise SystemExit("shadowed")\n'],
        ['.packages/python/codexec_own_module.py', 'VALUE = 11\n'],
      ]) {
        const wrote = await callTool<Value>(server.client, 'write_file', { session_id: id, path, content });
        expect(wrote.value.success).toBe(true);
      }
      const sent = await callTool<Value>(server.client, 'send_to_session', {
        session_id: id,
        code: 'import statistics, codexec_own_module\nprint(statistics.mean([1, 2, 3]), codexec_own_module.VALUE)',
      });
      expect(sent.value).toMatchObject({ success: true, stdout: '2 11\n' });
      // The global environment too, for one-shot runs (warm, forked by the zygote, and cold).
      const installed = await callTool<Value>(server.client, 'install_package', {
        language: 'python',
        package: 'statistics',
      });
      expect(installed.value).toMatchObject({ success: true, version: '9.9.9' });
      for (let run = 0; run < 3; run++) {
        const ran = await callTool<Value>(server.client, 'execute_code', {
          language: 'python',
          code: 'import statistics\nprint(statistics.mean([1, 2, 3]), hasattr(statistics, "VALUE"))',
        });
        expect(ran.value).toMatchObject({ success: true, stdout: '2 False\n' });
      }
    } finally {
      await server.close();
    }
  });
});
