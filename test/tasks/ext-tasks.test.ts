// The official Tasks client (@modelcontextprotocol/ext-tasks) against codexec over stdio, in the
// 2025-11-25 era its minimal form speaks: docs/tools.md's client-side example, run for real.
import { createTaskSessionFromClient, resultFromTaskOutcome } from '@modelcontextprotocol/ext-tasks/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { startServer, type TestServer } from '../helpers/server.js';

describe('@modelcontextprotocol/ext-tasks (2025-11-25)', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startServer({ era: 'legacy' });
  });
  afterAll(() => server?.close());

  it('calls execute_code as a task and settles it to the result a plain call gives', async () => {
    const session = createTaskSessionFromClient(server.client as never, { endpointId: 'codexec' });
    try {
      const execution = await session.callTool(
        'execute_code',
        { language: 'bash', code: 'echo first; sleep 1; echo done' },
        { task: { preference: 'prefer' } },
      );
      const { outcome } = await execution.settle();
      const result = resultFromTaskOutcome(outcome) as { structuredContent?: Record<string, unknown> };
      expect(result.structuredContent).toMatchObject({ success: true, stdout: 'first\ndone\n' });
      // It went through a task: the server kept one for this principal.
      const listed = await server.client.request({ method: 'tasks/list', params: {} }, z.looseObject({}));
      expect(JSON.stringify(listed)).toContain('"status":"completed"');
    } finally {
      await session.close();
    }
  });
});
