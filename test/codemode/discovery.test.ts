// Code mode's discovery in every run: with downstream servers configured and
// no allowed_tools, one-shot runs (warm ones too), sessions and saved scripts find and describe the
// tools; calls stay refused, naming the tool and "not allowed". A server that is down at start is
// named with its circuit's state, never as "no tool". No downstream server: nothing changes.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { callTool, startServer, type TestServer, tempDir } from '../helpers/server.js';

const FIXTURE = fileURLToPath(new URL('../fixtures/mcp/tools-server.mjs', import.meta.url));

interface Run {
  success: boolean;
  stdout: string;
  stderr: string;
  warm: boolean;
  tool_calls?: Array<{ tool: string; success: boolean; error?: string }>;
}

describe('discovery without allowed_tools', () => {
  let server: TestServer;
  beforeAll(async () => {
    const dir = tempDir();
    const config = join(dir, 'mcp.json');
    writeFileSync(
      config,
      JSON.stringify({
        mcpServers: {
          fx: { command: process.execPath, args: [FIXTURE] },
          // Down at start: it exits at once, as a broken server does.
          flaky: { command: process.execPath, args: ['-e', 'process.exit(1)'] },
        },
      }),
    );
    server = await startServer({ env: { CODEXEC_SANDBOX_MODE: 'namespace', CODEXEC_MCP_CONFIG: config } });
  }, 60_000);
  afterAll(() => server.close());

  const run = (language: string, code: string, extra: Record<string, unknown> = {}) =>
    callTool<Run>(server.client, 'execute_code', { language, code, ...extra });

  /** Until the warm pool has a process of `kind` waiting (a kind's first run starts it). */
  async function poolReady(kind: 'python' | 'node'): Promise<void> {
    await run(kind, kind === 'python' ? 'pass' : '0');
    for (let tries = 0; tries < 200; tries++) {
      const health = await callTool<{ pool: { ready: Record<string, number> } }>(server.client, 'health', {});
      if ((health.value.pool.ready[kind] ?? 0) > 0) return;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    throw new Error(`the warm pool never had a ${kind} process`);
  }

  it('python, warm: builtins and import codexec, top-level await; a call is refused naming the tool', async () => {
    await poolReady('python');
    const { value } = await run(
      'python',
      'import codexec, os\nprint(sorted(t["name"] for t in await discover_mcp_tools() if t["server"] == "fx")[0])\n' +
        'print((await codexec.search_tools("weather notes"))[0]["name"])\n' +
        'print(list((await get_tool_schema("mcp__fx__add"))["inputSchema"]["properties"]))\n' +
        'print("CODEXEC_BRIDGE_TOKEN" in os.environ)\n' +
        'try:\n    await call_mcp_tool("mcp__fx__add", {"a": 1, "b": 2})\n' +
        'except codexec.BridgeError as e:\n    print(e.code, e)',
    );
    expect(value.stderr).toBe('');
    expect(value.warm).toBe(true);
    expect(value.stdout).toBe(
      "mcp__fx__add\nmcp__fx__search_notes\n['a', 'b']\nFalse\n" +
        'TOOL_NOT_ALLOWED tool mcp__fx__add is not allowed for this run (allowed_tools: [])\n',
    );
    expect(value.tool_calls).toEqual([
      expect.objectContaining({
        tool: 'mcp__fx__add',
        success: false,
        error: expect.stringContaining('not allowed'),
      }),
    ]);
  }, 60_000);

  it.each(['node', 'typescript'])(
    '%s, warm: the globals discover; callMCPTool is refused',
    async (language) => {
      await poolReady('node');
      const { value } = await run(
        language,
        'const tools = await discoverMCPTools({ search: "add" });\n' +
          'console.log(tools.map((t) => t.name).join(","), (await searchTools("echo", 1))[0].name, typeof process.env.CODEXEC_BRIDGE_TOKEN);\n' +
          'try { await callMCPTool("mcp__fx__echo", { text: "x" }) } catch (e) { console.log(e.code, e.message) }',
      );
      expect(value.stderr).toBe('');
      expect(value.warm).toBe(true);
      expect(value.stdout).toBe(
        'mcp__fx__add mcp__fx__echo undefined\n' +
          'TOOL_NOT_ALLOWED tool mcp__fx__echo is not allowed for this run (allowed_tools: [])\n',
      );
    },
    60_000,
  );

  it('a run that makes no call has no tool_calls (its result is as before)', async () => {
    const { value } = await run('python', 'print(1)');
    expect(value.stdout).toBe('1\n');
    expect(value.tool_calls).toBeUndefined();
  });

  it.each(['python', 'node'])(
    '%s session: discovery across sends, calls refused',
    async (language) => {
      const { value: started } = await callTool<{ session_id: string }>(server.client, 'start_session', {
        language,
      });
      const send = (code: string) =>
        callTool<Run>(server.client, 'send_to_session', { session_id: started.session_id, code });
      const found = await send(
        language === 'python'
          ? 'print(len([t for t in await discover_mcp_tools() if t["server"] == "fx"]))'
          : 'console.log((await discoverMCPTools()).filter((t) => t.server === "fx").length)',
      );
      expect(found.value.stdout).toBe('6\n');
      const refused = await send(
        language === 'python'
          ? 'try:\n    await call_mcp_tool("mcp__fx__add", {"a": 1, "b": 1})\nexcept Exception as e:\n    print(e.code)'
          : 'try { await callMCPTool("mcp__fx__add", { a: 1, b: 1 }) } catch (e) { console.log(e.code) }',
      );
      expect(refused.value.stdout).toBe('TOOL_NOT_ALLOWED\n');
      await callTool(server.client, 'close_session', { session_id: started.session_id });
    },
    60_000,
  );

  it('a saved script discovers too', async () => {
    await callTool(server.client, 'save_script', {
      name: 'finder',
      language: 'python',
      code: 'print((await search_tools("add"))[0]["name"])',
      description: 'finds a tool',
    });
    const { value } = await callTool<Run>(server.client, 'run_script', { name: 'finder' });
    expect(value.stdout).toBe('mcp__fx__add\n');
  }, 60_000);

  it('a call to a server that is down names it and its circuit state, never "no tool"', async () => {
    const { value } = await run(
      'node',
      'for (let i = 0; i < 6; i++) { try { await callMCPTool("mcp__flaky__add", { a: 1, b: 2 }) } catch (e) { console.log(e.code, e.message) } }',
      { allowed_tools: ['mcp__flaky__*'] },
    );
    const lines = value.stdout.trim().split('\n');
    expect(lines).toHaveLength(6);
    for (const line of lines) {
      expect(line).not.toContain('no tool');
      expect(line).toMatch(/server "flaky" is unavailable \(circuit (open|closed)[^)]*\): \S/);
    }
    // Five failures in a row (discoveries before this run count too) open its circuit.
    expect(lines.at(-1)).toMatch(
      /^CIRCUIT_OPEN server "flaky" is unavailable \(circuit open, retry in \d+ s\): /,
    );
    const { value: health } = await callTool<{ downstream: Array<{ name: string; circuit: string }> }>(
      server.client,
      'health',
      {},
    );
    expect(health.downstream.find((entry) => entry.name === 'flaky')?.circuit).toBe('open');
  }, 60_000);
});

describe('no downstream server configured', () => {
  it('nothing changes: no helpers, no socket, warm runs as before', async () => {
    const server = await startServer({ env: { CODEXEC_SANDBOX_MODE: 'namespace' } });
    try {
      const python = await callTool<Run>(server.client, 'execute_code', {
        language: 'python',
        code: 'import builtins, os\nprint(hasattr(builtins, "discover_mcp_tools"), sorted(os.listdir(".")))',
      });
      expect(python.value.stdout).toBe("False ['_codexec_script.py']\n");
      const node = await callTool<Run>(server.client, 'execute_code', {
        language: 'node',
        code: 'console.log(typeof discoverMCPTools, typeof callMCPTool)',
      });
      expect(node.value.stdout).toBe('undefined undefined\n');
    } finally {
      await server.close();
    }
  }, 60_000);
});
