// Code mode's tool calls in the execution log: a run's JSONL line and its get_execution_log entry
// carry the same `tool_calls` (and `tool_calls_omitted`) as its result, for a one-shot run and for
// a session's send. The downstream server is a real MCP server over stdio.
import { readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { callTool, startServer, type TestServer, tempDir } from '../helpers/server.js';

const FIXTURE = fileURLToPath(new URL('../fixtures/mcp/tools-server.mjs', import.meta.url));

interface Calls {
  execution_id: string;
  tool_calls?: Array<{ tool: string; success: boolean; duration_ms: number; error?: string }>;
  tool_calls_omitted?: Array<{ tool: string; success: boolean; count: number }>;
}

/** Three calls: two allowed echoes and one refused add; one record kept, the rest counted. */
const CODE = [
  'await call_mcp_tool("mcp__fx__echo", {"text": "one"})',
  'await call_mcp_tool("mcp__fx__echo", {"text": "two"})',
  'try:',
  '    await call_mcp_tool("mcp__fx__add", {"a": 1, "b": 2})',
  'except Exception:',
  '    pass',
].join('\n');

describe('tool_calls in execution log entries', () => {
  let server: TestServer;
  const dir = tempDir('codexec-toolcalls-');
  beforeAll(async () => {
    const config = join(dir, 'mcp.json');
    writeFileSync(
      config,
      JSON.stringify({ mcpServers: { fx: { command: process.execPath, args: [FIXTURE] } } }),
    );
    server = await startServer({
      env: { CODEXEC_MCP_CONFIG: config, CODEXEC_MAX_TOOL_CALL_RECORDS: '1' },
    });
  }, 60_000);
  afterAll(async () => {
    await server.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** The JSONL line of `id` among the log files (daily or a session's). */
  function lineOf(id: string): Calls | undefined {
    const logs = join(server.home, 'logs');
    return readdirSync(logs)
      .filter((name) => /^(executions|session)-.*\.jsonl$/.test(name))
      .flatMap((name) => readFileSync(join(logs, name), 'utf8').trim().split('\n'))
      .map((line) => JSON.parse(line) as Calls & { type: string })
      .find((line) => line.type === 'execution' && line.execution_id === id);
  }

  /** get_execution_log's entry, once the line is written (a session's is written after its reply). */
  async function logged(id: string): Promise<Calls> {
    const deadline = Date.now() + 15_000;
    for (;;) {
      const got = await callTool<Calls & { code?: string }>(server.client, 'get_execution_log', {
        execution_id: id,
      });
      if (!got.isError) return got.value;
      expect(got.value.code).toBe('NOT_FOUND');
      if (Date.now() > deadline) throw new Error(`${id} never reached the log`);
    }
  }

  function expectCalls(value: Calls): void {
    expect(value.tool_calls).toEqual([
      { tool: 'mcp__fx__echo', success: true, duration_ms: expect.any(Number) },
    ]);
    expect(value.tool_calls_omitted).toEqual(
      expect.arrayContaining([
        { tool: 'mcp__fx__echo', success: true, count: 1 },
        { tool: 'mcp__fx__add', success: false, count: 1 },
      ]),
    );
    expect(value.tool_calls_omitted).toHaveLength(2);
  }

  it('a one-shot run: the result, its JSONL line and get_execution_log agree', async () => {
    const run = await callTool<Calls>(server.client, 'execute_code', {
      language: 'python',
      code: CODE,
      allowed_tools: ['mcp__fx__echo'],
    });
    expect(run.isError).toBe(false);
    expectCalls(run.value);
    const entry = await logged(run.value.execution_id);
    expectCalls(entry);
    expect(entry.tool_calls).toEqual(run.value.tool_calls);
    const line = lineOf(run.value.execution_id);
    expect(line?.tool_calls).toEqual(run.value.tool_calls);
    expect(line?.tool_calls_omitted).toEqual(run.value.tool_calls_omitted);
  });

  it("a session's send: the result, its JSONL line and get_execution_log agree", async () => {
    const started = await callTool<{ session_id: string }>(server.client, 'start_session', {
      language: 'python',
      allowed_tools: ['mcp__fx__echo'],
    });
    const sent = await callTool<Calls>(server.client, 'send_to_session', {
      session_id: started.value.session_id,
      code: CODE,
    });
    expect(sent.isError).toBe(false);
    expectCalls(sent.value);
    const entry = await logged(sent.value.execution_id);
    expectCalls(entry);
    expect(entry.tool_calls).toEqual(sent.value.tool_calls);
    expect(lineOf(sent.value.execution_id)?.tool_calls).toEqual(sent.value.tool_calls);
  });

  it('a run without code mode has no tool_calls in its entry', async () => {
    const run = await callTool<Calls>(server.client, 'execute_code', { language: 'bash', code: 'true' });
    const entry = await logged(run.value.execution_id);
    expect(entry.tool_calls).toBeUndefined();
    expect(entry.tool_calls_omitted).toBeUndefined();
  });
});
