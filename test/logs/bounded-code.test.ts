// 9 MB of code once made ~36 MB of log and index per call. A log entry keeps the code's
// first MAX_LOGGED_CODE_CHARS characters, says it was cut, and carries the whole's sha256.
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_LOGGED_CODE_CHARS } from '../../src/logs/writer.js';
import { callTool, startServer, type TestServer } from '../helpers/server.js';

describe('execution log entries of very large code', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startServer();
  });
  afterAll(() => server.close());

  it('keep the start of the code, code_truncated and its sha256; search and get still work', async () => {
    const code = `print("big-code-marker")\n${'#'.repeat(2_000_000)}\n`;
    const run = await callTool<{ execution_id: string; stdout: string }>(server.client, 'execute_code', {
      language: 'python',
      code,
    });
    expect(run.value.stdout).toBe('big-code-marker\n');
    const logs = join(server.home, 'logs');
    const file = readdirSync(logs).find((name) => name.startsWith('executions-')) as string;
    const lines = readFileSync(join(logs, file), 'utf8').trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]?.length).toBeLessThan(MAX_LOGGED_CODE_CHARS + 10_000);
    const entry = JSON.parse(lines[0] as string);
    expect(entry.code).toBe(code.slice(0, MAX_LOGGED_CODE_CHARS));
    expect(entry.code_truncated).toBe(true);
    expect(entry.code_sha256).toBe(createHash('sha256').update(code).digest('hex'));
    const got = await callTool<{ code: string }>(server.client, 'get_execution_log', {
      execution_id: run.value.execution_id,
    });
    expect(got.value.code.length).toBe(MAX_LOGGED_CODE_CHARS);
    const found = await callTool<{ total_count: number }>(server.client, 'search_execution_logs', {
      query: 'big-code-marker',
    });
    expect(found.value.total_count).toBe(1);
  });
});
