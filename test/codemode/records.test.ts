// Bounded tool-call records: a loop of refused calls once made
// 139,312 records, a 44 MB result the SDK client could not read, 21 MB log and audit lines and a
// 10 s stall. Now a result, its log entry and its audit entry keep the first
// CODEXEC_MAX_TOOL_CALL_RECORDS calls and count the rest; refused calls take slots of the rate
// limit, and past it each refusal waits, so the loop is throttled; the server keeps answering.
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { baseEnv, CLI, callTool, startServer, type TestServer, tempDir } from '../helpers/server.js';

const FIXTURE = fileURLToPath(new URL('../fixtures/mcp/tools-server.mjs', import.meta.url));
const MAX = 10;

interface Run {
  stdout: string;
  stderr: string;
  execution_id: string;
  tool_calls?: Array<{ tool: string; success: boolean }>;
  tool_calls_omitted?: Array<{ tool: string; success: boolean; count: number }>;
}

describe('tool-call records of a loop of refused calls', () => {
  let server: TestServer;
  beforeAll(async () => {
    const dir = tempDir();
    const config = join(dir, 'mcp.json');
    writeFileSync(
      config,
      JSON.stringify({ mcpServers: { fx: { command: process.execPath, args: [FIXTURE] } } }),
    );
    server = await startServer({
      env: {
        CODEXEC_SANDBOX_MODE: 'namespace',
        CODEXEC_MCP_CONFIG: config,
        CODEXEC_MAX_TOOL_CALL_RECORDS: String(MAX),
      },
    });
  }, 60_000);
  afterAll(() => server.close());

  const linesOf = (prefix: string) => {
    const logs = join(server.home, 'logs');
    return readdirSync(logs)
      .filter((name) => name.startsWith(prefix))
      .flatMap((name) => readFileSync(join(logs, name), 'utf8').trim().split('\n'));
  };

  it.each([
    [
      'python',
      'import time\nend = time.time() + 4\nn = 0\nwhile time.time() < end:\n    try:\n' +
        '        await call_mcp_tool("mcp__fx__add", {"a": 1, "b": 2})\n    except Exception:\n        n += 1\nprint(n)',
    ],
    [
      // Calls fired without waiting for their answers, as fast as the code can make them; what
      // was answered within 4 s is counted (the rest wait their turn: the run's end ends them).
      'node',
      'const end = Date.now() + 4000; let n = 0;\n' +
        'for (let i = 1; Date.now() < end; i++) {\n' +
        '  callMCPTool("mcp__fx__add", { a: 1, b: 2 }).catch(() => { n++ });\n' +
        '  if (i % 10 === 0) await new Promise((resolve) => setTimeout(resolve, 1));\n' +
        '}\nconsole.log(n); process.exit(0)',
    ],
  ])(
    '%s: a small result, bounded log and audit lines, a server that answers within 2 s',
    async (language, code) => {
      let slowest = 0;
      let looping = true;
      const pings = (async () => {
        while (looping) {
          const started = Date.now();
          await server.client.ping();
          slowest = Math.max(slowest, Date.now() - started);
          await new Promise((resolve) => setTimeout(resolve, 100));
        }
      })();
      const { value, text } = await callTool<Run>(server.client, 'execute_code', {
        language,
        code,
        allowed_tools: ['mcp__fx__echo'], // the loop calls another tool: each call is refused
        timeout_ms: 60_000,
      });
      looping = false;
      await pings;
      expect(value.stderr).toBe('');
      const answered = Number(value.stdout.trim());
      expect(value.tool_calls).toHaveLength(MAX);
      const omitted = value.tool_calls_omitted ?? [];
      expect(omitted).toEqual([{ tool: 'mcp__fx__add', success: false, count: expect.any(Number) }]);
      const recorded = MAX + (omitted[0]?.count ?? 0);
      if (language === 'python') expect(recorded).toBe(answered);
      else expect(recorded).toBeGreaterThanOrEqual(answered);
      // Throttled: 60 calls in the first minute (CODEXEC_BRIDGE_RATE_LIMIT), then about one a second.
      expect(recorded).toBeLessThan(100);
      expect(text.length).toBeLessThan(20_000);
      expect(slowest).toBeLessThan(2000);
      // The connection survived: the next call is answered.
      expect(
        (await callTool<Run>(server.client, 'execute_code', { language: 'python', code: 'print(2)' })).value
          .stdout,
      ).toBe('2\n');
      const logged = linesOf('executions-').find((line) => line.includes(value.execution_id)) ?? '';
      expect(logged.length).toBeLessThan(20_000);
      expect(JSON.parse(logged).tool_calls_omitted).toEqual(omitted);
      const audited = linesOf('audit-').find((line) => line.includes(value.execution_id)) ?? '';
      expect(audited.length).toBeLessThan(20_000);
      expect(JSON.parse(audited).tool_calls_omitted).toEqual(omitted);
    },
    90_000,
  );

  it('the audit trail with counted calls still verifies', () => {
    expect(() =>
      execFileSync(process.execPath, [CLI, 'audit', 'verify'], { env: baseEnv(server.home) }),
    ).not.toThrow();
  });

  it('a session counts per send', async () => {
    const { value: started } = await callTool<{ session_id: string }>(server.client, 'start_session', {
      language: 'python',
      allowed_tools: [],
    });
    const send = () =>
      callTool<Run>(server.client, 'send_to_session', {
        session_id: started.session_id,
        code: 'for i in range(15):\n    try:\n        await call_mcp_tool("mcp__fx__echo", {"text": "x"})\n    except Exception:\n        pass',
      });
    for (let i = 0; i < 2; i++) {
      const { value } = await send();
      expect(value.tool_calls).toHaveLength(MAX);
      expect(value.tool_calls_omitted).toEqual([{ tool: 'mcp__fx__echo', success: false, count: 15 - MAX }]);
    }
    await callTool(server.client, 'close_session', { session_id: started.session_id });
  }, 60_000);
});
