// Code mode: sandboxed code calls the tools of downstream MCP servers through codexec's
// bridge, over a Unix socket in its own workspace with a per-run token; the network stays off.
// The downstream server is a real MCP server over stdio (test/fixtures/mcp/tools-server.mjs).
import { spawn, spawnSync } from 'node:child_process';
import { readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { baseEnv, CLI, callTool, startServer, type TestServer, tempDir } from '../helpers/server.js';
import { DOCKER_MODE, ensureImage } from '../sandbox/container/engine.js';

const FIXTURE = fileURLToPath(new URL('../fixtures/mcp/tools-server.mjs', import.meta.url));

interface Run {
  success: boolean;
  stdout: string;
  stderr: string;
  execution_id: string;
  tool_calls?: Array<{ tool: string; success: boolean; duration_ms: number; error?: string }>;
}

function mcpConfig(dir: string, env: Record<string, string> = {}): string {
  const path = join(dir, 'mcp.json');
  writeFileSync(
    path,
    JSON.stringify({ mcpServers: { fx: { command: process.execPath, args: [FIXTURE], env } } }),
  );
  return path;
}

describe.each(['namespace', 'subprocess', 'docker'])('code mode (%s sandbox)', (mode) => {
  let server: TestServer;
  let starts: string;
  beforeAll(async () => {
    if (mode === 'docker') ensureImage();
    const dir = tempDir();
    starts = join(dir, 'starts');
    server = await startServer({
      env: {
        ...(mode === 'docker' ? DOCKER_MODE : { CODEXEC_SANDBOX_MODE: mode }),
        CODEXEC_MCP_CONFIG: mcpConfig(dir, { STARTS_FILE: starts }),
        CODEXEC_BRIDGE_RATE_LIMIT: '5',
      },
    });
  }, 600_000);
  afterAll(() => server.close());

  const run = (language: string, code: string, allowed?: string[]) =>
    callTool<Run>(server.client, 'execute_code', {
      language,
      code,
      ...(allowed && { allowed_tools: allowed }),
    });

  it('python: await call_mcp_tool as a builtin and through import codexec, at the top level', async () => {
    const { value } = await run(
      'python',
      'r = await call_mcp_tool("mcp__fx__add", {"a": 2, "b": 3})\nprint(r["sum"])\n' +
        'import codexec\nprint(await codexec.call_mcp_tool("mcp__fx__echo", {"text": "hi"}))',
      ['mcp__fx__*'],
    );
    expect(value.stderr).toBe('');
    expect(value.stdout).toBe('5\nhi\n');
    expect(value.tool_calls?.map((call) => [call.tool, call.success])).toEqual([
      ['mcp__fx__add', true],
      ['mcp__fx__echo', true],
    ]);
  });

  it.each(['node', 'typescript'])('%s: callMCPTool as a global', async (language) => {
    const typed = language === 'typescript' ? ': { sum: number }' : '';
    const { value } = await run(
      language,
      `const r${typed} = await callMCPTool('mcp__fx__add', { a: 40, b: 2 });\nconsole.log(r.sum);`,
      ['mcp__fx__add'],
    );
    expect(value.stderr).toBe('');
    expect(value.stdout).toBe('42\n');
    expect(value.tool_calls).toHaveLength(1);
  });

  it('refuses a tool outside allowed_tools inside the code, naming it; discovery still lists every tool', async () => {
    const { value } = await run(
      'node',
      'try { await callMCPTool("mcp__fx__add", { a: 1, b: 1 }) } catch (e) { console.log(e.code, e.message) }\n' +
        'console.log((await discoverMCPTools()).map((t) => t.name).sort().join(","))\n' +
        'console.log((await searchTools("weather notes")).map((t) => t.name).join(","))\n' +
        'console.log(Object.keys((await getToolSchema("mcp__fx__add")).inputSchema.properties).join(","))',
      ['mcp__fx__e*'],
    );
    const [refused, all, found, schema] = value.stdout.trim().split('\n');
    expect(refused).toContain('TOOL_NOT_ALLOWED');
    expect(refused).toContain('mcp__fx__add is not allowed');
    expect(all).toBe(
      'mcp__fx__add,mcp__fx__crash,mcp__fx__echo,mcp__fx__fail,mcp__fx__search_notes,mcp__fx__slow',
    );
    expect(found).toBe('mcp__fx__search_notes');
    expect(schema).toBe('a,b');
    expect(value.tool_calls).toEqual([
      expect.objectContaining({
        tool: 'mcp__fx__add',
        success: false,
        error: expect.stringContaining('not allowed'),
      }),
    ]);
  });

  it("checks arguments against the tool's input schema before the downstream server sees them", async () => {
    const { value } = await run(
      'node',
      'try { await callMCPTool("mcp__fx__add", { a: 1, b: "two" }) } catch (e) { console.log(e.code, e.message) }',
      ['mcp__fx__add'],
    );
    expect(value.stdout).toContain(
      'INVALID_ARGUMENTS mcp__fx__add: the arguments do not match its input schema',
    );
    expect(value.stdout).toContain('b must be number');
  });

  it('tells the model how to reach the downstream tools in its instructions', () => {
    expect(server.client.getInstructions()).toContain('give execute_code allowed_tools');
  });

  it('reports the downstream server in health once it was used', async () => {
    const { value } = await callTool<{
      downstream: Array<{ name: string; connected: boolean; tools: number | null }>;
      pool: { size: number };
      sessions: number;
    }>(server.client, 'health', {});
    expect(value.downstream).toEqual([
      expect.objectContaining({ name: 'fx', connected: true, tools: 6, circuit: 'closed' }),
    ]);
    expect(value.pool.size).toBeGreaterThanOrEqual(0);
    expect(value.sessions).toBe(0);
  });

  it("raises a downstream tool's error in the code; an unknown tool too", async () => {
    const { value } = await run(
      'python',
      'import codexec\nfor name in ("mcp__fx__fail", "mcp__fx__nope"):\n    try:\n        await call_mcp_tool(name, {})\n' +
        '    except codexec.BridgeError as e:\n        print(e.code, e)',
      ['*'],
    );
    expect(value.stdout).toBe(
      'TOOL_ERROR mcp__fx__fail failed: it broke\nTOOL_NOT_FOUND no tool mcp__fx__nope; discoverMCPTools() lists them\n',
    );
  });

  it('keeps the network off in the same run that calls a tool', async () => {
    const { value } = await run(
      'python',
      'print(await call_mcp_tool("mcp__fx__echo", {"text": "ok"}))\nimport socket\ntry:\n' +
        '    socket.create_connection(("1.1.1.1", 53), timeout=2)\n    print("online")\n' +
        'except OSError as e:\n    print("offline")',
      ['mcp__fx__echo'],
    );
    // The subprocess mode has no network isolation to prove (docs/security.md says so).
    if (mode === 'namespace') expect(value.stdout).toBe('ok\noffline\n');
    else expect(value.stdout).toMatch(/^ok\n/);
  });

  it('limits calls per run (CODEXEC_BRIDGE_RATE_LIMIT)', async () => {
    const { value } = await run(
      'node',
      'for (let i = 0; i < 6; i++) { try { await callMCPTool("mcp__fx__echo", { text: "x" }) } catch (e) { console.log(i, e.code) } }',
      ['mcp__fx__echo'],
    );
    expect(value.stdout).toBe('5 RATE_LIMITED\n');
  });

  it('gives discovery without allowed_tools (no token in the environment); bash is refused code mode', async () => {
    const plain = await run(
      'node',
      'console.log(typeof callMCPTool, typeof process.env.CODEXEC_BRIDGE_TOKEN)',
    );
    expect(plain.value.stdout).toBe('function undefined\n');
    expect(plain.value.tool_calls).toBeUndefined();
    const bash = await callTool<{ code: string }>(server.client, 'execute_code', {
      language: 'bash',
      code: 'echo x',
      allowed_tools: ['*'],
    });
    expect(bash.isError).toBe(true);
    expect(bash.value.code).toBe('INVALID_INPUT');
  });

  it('records tool_calls in the execution log and the audit trail, and starts the downstream server once', async () => {
    const { value } = await run('python', 'await call_mcp_tool("mcp__fx__echo", {"text": "logged"})', [
      'mcp__fx__echo',
    ]);
    const logs = join(server.home, 'logs');
    const lines = readdirSync(logs)
      .filter((name) => name.startsWith('executions-'))
      .flatMap((name) => readFileSync(join(logs, name), 'utf8').trim().split('\n'))
      .map((line) => JSON.parse(line) as { execution_id: string; tool_calls?: unknown });
    expect(lines.find((line) => line.execution_id === value.execution_id)?.tool_calls).toEqual([
      expect.objectContaining({ tool: 'mcp__fx__echo', success: true }),
    ]);
    // And in its audit entry (hashed with the rest).
    const audit = readdirSync(logs)
      .filter((name) => /^audit-\d/.test(name))
      .flatMap((name) => readFileSync(join(logs, name), 'utf8').trim().split('\n'))
      .map((line) => JSON.parse(line) as { execution_id: string; tool_calls: unknown });
    expect(audit.find((entry) => entry.execution_id === value.execution_id)?.tool_calls).toEqual([
      expect.objectContaining({ tool: 'mcp__fx__echo', success: true }),
    ]);
    expect(readFileSync(starts, 'utf8').trim().split('\n')).toHaveLength(1);
  });
});

describe('CODEXEC_MCP_CONFIG', () => {
  it('a file that is not the mcpServers format stops start-up with exit 2, naming the file and the entry', () => {
    const dir = tempDir();
    const path = join(dir, 'mcp.json');
    writeFileSync(path, JSON.stringify({ mcpServers: { a__b: { command: 'x' } } }));
    const run = spawnSync(process.execPath, [CLI, 'serve'], {
      env: { ...baseEnv(dir), CODEXEC_MCP_CONFIG: path },
      input: '',
      encoding: 'utf8',
    });
    expect(run.status).toBe(2);
    expect(run.stderr).toContain(`CODEXEC_MCP_CONFIG: ${path}: mcpServers.a__b`);
    rmSync(dir, { recursive: true, force: true });
  });
});

describe('CODEXEC_TOOLS', () => {
  it('codemode registers execute_code and health only, with a tools/list under 2,400 characters', async () => {
    const server = await startServer({ env: { CODEXEC_TOOLS: 'codemode' } });
    try {
      const { tools } = await server.client.listTools();
      expect(tools.map((tool) => tool.name)).toEqual(['execute_code', 'health']);
      // The instructions name no tool that is not there.
      expect(server.client.getInstructions()).not.toMatch(/sessions for|execute_command|saved scripts/);
      expect(JSON.stringify(tools).length).toBeLessThan(2400);
      const ran = await callTool<{ stdout: string }>(server.client, 'execute_code', {
        language: 'python',
        code: 'print(6 * 7)',
      });
      expect(ran.value.stdout).toBe('42\n');
    } finally {
      await server.close();
    }
  });

  it('a comma list registers exactly those; an unknown name stops start-up (exit 2, naming it)', async () => {
    const server = await startServer({ env: { CODEXEC_TOOLS: 'search_execution_logs, health' } });
    try {
      const { tools } = await server.client.listTools();
      expect(tools.map((tool) => tool.name).sort()).toEqual(['health', 'search_execution_logs']);
    } finally {
      await server.close();
    }
    const dir = tempDir();
    const bad = spawnSync(process.execPath, [CLI, 'serve'], {
      env: { ...baseEnv(dir), CODEXEC_TOOLS: 'execute_code,run_everything' },
      input: '',
      encoding: 'utf8',
    });
    expect(bad.status).toBe(2);
    expect(bad.stderr).toContain('CODEXEC_TOOLS: no tool run_everything');
    rmSync(dir, { recursive: true, force: true });
  });
});

describe('code mode in sessions', () => {
  it.each(['python', 'node'])(
    '%s: tools across sends, state kept, tool_calls per send',
    async (language) => {
      const dir = tempDir();
      const server = await startServer({ env: { CODEXEC_MCP_CONFIG: mcpConfig(dir) } });
      try {
        const { value: started } = await callTool<{ session_id: string }>(server.client, 'start_session', {
          language,
          allowed_tools: ['mcp__fx__add'],
        });
        const send = (code: string) =>
          callTool<Run>(server.client, 'send_to_session', { session_id: started.session_id, code });
        const first = await send(
          language === 'python'
            ? 'r = await call_mcp_tool("mcp__fx__add", {"a": 1, "b": 2})'
            : 'var r = await callMCPTool("mcp__fx__add", { a: 1, b: 2 })',
        );
        expect(first.value.stderr).toBe('');
        expect(first.value.tool_calls).toEqual([
          expect.objectContaining({ tool: 'mcp__fx__add', success: true }),
        ]);
        const second = await send(
          language === 'python'
            ? 'print(r["sum"], (await call_mcp_tool("mcp__fx__add", {"a": r["sum"], "b": 10}))["sum"])'
            : 'console.log(r.sum, (await callMCPTool("mcp__fx__add", { a: r.sum, b: 10 })).sum)',
        );
        expect(second.value.stdout).toBe('3 13\n');
        expect(second.value.tool_calls).toHaveLength(1);
        const refused = await send(
          language === 'python'
            ? 'try:\n    await call_mcp_tool("mcp__fx__echo", {"text": "x"})\nexcept Exception as e:\n    print(e.code)'
            : 'try { await callMCPTool("mcp__fx__echo", { text: "x" }) } catch (e) { console.log(e.code) }',
        );
        expect(refused.value.stdout).toBe('TOOL_NOT_ALLOWED\n');
        // Each send's line in the session's log has that send's calls.
        const lines = readFileSync(join(server.home, 'logs', `session-${started.session_id}.jsonl`), 'utf8')
          .trim()
          .split('\n')
          .map((line) => JSON.parse(line) as { execution_id?: string; tool_calls?: Array<{ tool: string }> });
        const logged = (id: string) =>
          lines.find((line) => line.execution_id === id)?.tool_calls?.map((call) => call.tool);
        expect(logged(first.value.execution_id)).toEqual(['mcp__fx__add']);
        expect(logged(second.value.execution_id)).toEqual(['mcp__fx__add']);
        await callTool(server.client, 'close_session', { session_id: started.session_id });
        // The channel went with the session.
        expect(
          readdirSync(join(server.home, 'sandbox')).filter((name) => name === started.session_id),
        ).toEqual([]);
      } finally {
        await server.close();
        rmSync(dir, { recursive: true, force: true });
      }
    },
    60_000,
  );
});

describe('code mode with a downstream server over Streamable HTTP', () => {
  it('calls its tools with the configured headers', async () => {
    const dir = tempDir();
    const fixture = spawn(
      process.execPath,
      [fileURLToPath(new URL('../fixtures/mcp/http-server.mjs', import.meta.url))],
      {
        env: { ...process.env, TOKEN: 'fixture-token' },
        stdio: ['ignore', 'pipe', 'inherit'],
      },
    );
    try {
      const url = await new Promise<string>((resolve) =>
        fixture.stdout.once('data', (chunk: Buffer) => resolve(chunk.toString().trim())),
      );
      const config = join(dir, 'mcp.json');
      writeFileSync(
        config,
        JSON.stringify({
          mcpServers: { web: { type: 'http', url, headers: { Authorization: 'Bearer fixture-token' } } },
        }),
      );
      const server = await startServer({ env: { CODEXEC_MCP_CONFIG: config } });
      try {
        const { value } = await callTool<Run>(server.client, 'execute_code', {
          language: 'python',
          code: 'print(await call_mcp_tool("mcp__web__shout", {"text": "over http"}))',
          allowed_tools: ['mcp__web__shout'],
        });
        expect(value.stderr).toBe('');
        expect(value.stdout).toBe('OVER HTTP\n');
        const health = await callTool<{ downstream: Array<{ name: string; transport: string }> }>(
          server.client,
          'health',
          {},
        );
        expect(health.value.downstream).toEqual([
          expect.objectContaining({ name: 'web', transport: 'http' }),
        ]);
      } finally {
        await server.close();
      }
    } finally {
      fixture.kill();
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);
});

describe('code mode and approval', () => {
  it('the approval form says which tools the code may call and that it may ask the model', async () => {
    const dir = tempDir();
    const forms: string[] = [];
    const server = await startServer({
      env: { CODEXEC_MCP_CONFIG: mcpConfig(dir), CODEXEC_APPROVAL: 'ask' },
      elicit: (params) => {
        forms.push(params.message);
        return { action: 'accept', content: { decision: 'approve' } };
      },
    });
    try {
      const { value } = await callTool<Run>(server.client, 'execute_code', {
        language: 'node',
        code: 'console.log((await callMCPTool("mcp__fx__add", { a: 1, b: 1 })).sum)',
        allowed_tools: ['mcp__fx__add'],
        enable_sampling: true,
      });
      expect(value.stdout).toBe('2\n');
      expect(forms[0]).toContain(
        "The code may also: call the MCP tools mcp__fx__add; ask the client's model (llm.ask / llm.think)",
      );
    } finally {
      await server.close();
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);
});

describe('downstream servers end with codexec', () => {
  it('leaves no downstream server process after codexec exits', async () => {
    const dir = tempDir();
    const starts = join(dir, 'starts');
    const server = await startServer({
      env: { CODEXEC_MCP_CONFIG: mcpConfig(dir, { STARTS_FILE: starts }) },
    });
    await callTool(server.client, 'execute_code', {
      language: 'node',
      code: 'await callMCPTool("mcp__fx__echo", { text: "x" })',
      allowed_tools: ['mcp__fx__echo'],
    });
    const pid = Number(readFileSync(starts, 'utf8').trim());
    expect(() => process.kill(pid, 0)).not.toThrow();
    await server.close();
    const deadline = Date.now() + 10_000;
    const alive = () => {
      try {
        process.kill(pid, 0);
        return true;
      } catch {
        return false;
      }
    };
    while (alive() && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
    expect(alive()).toBe(false);
    rmSync(dir, { recursive: true, force: true });
  }, 30_000);
});
