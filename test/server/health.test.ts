// health names the sandbox mode runs use: `auto` as it resolved, the mode every run reports.
import { describe, expect, it } from 'vitest';
import { callTool, startServer } from '../helpers/server.js';

describe('health', () => {
  it('names the sandbox mode in use, as a run reports it, not "auto"', async () => {
    const server = await startServer({ env: { CODEXEC_SANDBOX_MODE: 'auto' } });
    try {
      const run = await callTool<{ sandbox_mode: string }>(server.client, 'execute_code', {
        language: 'bash',
        code: 'true',
      });
      const health = await callTool<{ sandbox_mode: string }>(server.client, 'health', {});
      expect(health.value.sandbox_mode).not.toBe('auto');
      expect(health.value.sandbox_mode).toBe(run.value.sandbox_mode);
    } finally {
      await server.close();
    }
  });
});
