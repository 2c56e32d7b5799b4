// CODEXEC_QUOTAS and MCP Tasks (2026-07-28, raw JSON-RPC over stdio): a task's run counts against
// max_concurrent_runs while it runs, though its call was answered at once.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RawServer, startRawServer } from '../helpers/raw.js';
import { overStdio, pollUntilDone, type Send } from '../helpers/tasks.js';
import { quotasFile, removeQuotaFiles } from './helpers.js';

describe('a task under max_concurrent_runs', () => {
  let server: RawServer;
  let send: Send;
  beforeAll(async () => {
    server = startRawServer({ CODEXEC_QUOTAS: quotasFile({ local: { max_concurrent_runs: 1 } }) });
    await server.discover();
    send = overStdio(server);
  });
  afterAll(async () => {
    await server.close();
    removeQuotaFiles();
  });

  const plain = async (code: string) => {
    const reply = await send(
      'tools/call',
      { name: 'execute_code', arguments: { language: 'bash', code } },
      false,
    );
    return reply.result?.structuredContent as Record<string, unknown>;
  };

  it('holds the one run of the local principal until it ends', async () => {
    const created = await send('tools/call', {
      name: 'execute_code',
      arguments: { language: 'bash', code: 'sleep 2; echo task' },
    });
    expect(created.result).toMatchObject({ resultType: 'task', status: 'working' });
    expect(await plain('echo meanwhile')).toMatchObject({
      code: 'QUOTA_EXCEEDED',
      limit: 'max_concurrent_runs',
    });
    const done = await pollUntilDone(send, created.result?.taskId as string);
    expect(done.result?.status).toBe('completed');
    expect(await plain('echo after')).toMatchObject({ success: true, stdout: 'after\n' });
  });
});
