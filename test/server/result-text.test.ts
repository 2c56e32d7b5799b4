import { writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { callTool, ERAS, startServer, type TestServer, tempDir, textFacts } from '../helpers/server.js';

const FIXTURE = resolve(import.meta.dirname, '../fixtures/mcp/tools-server.mjs');
const TOOLS_LIST_BUDGET = 24 * 1024;
const APPS = { extensions: { 'io.modelcontextprotocol/ui': { mimeTypes: ['text/html;profile=mcp-app'] } } };

/** The text content of a call, and its structured value. */
async function call(server: TestServer, name: string, args: Record<string, unknown>) {
  const result = await callTool<Record<string, unknown>>(server.client, name, args);
  return { ...result, facts: textFacts(result.text, result.value) };
}

describe.each(ERAS)('what a model reads (%s era)', (era) => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startServer({ era, env: { CODEXEC_MAX_OUTPUT_CHARS: '2000' } });
  });
  afterAll(() => server.close());

  it('lists the tools in at most 24 KB, without schema noise, limits stated where they bind', async () => {
    const listed = await server.client.listTools();
    const bytes = Buffer.byteLength(JSON.stringify(listed));
    expect(bytes).toBeLessThanOrEqual(TOOLS_LIST_BUDGET);
    const text = JSON.stringify(listed);
    expect(text).not.toContain('$schema');
    expect(text).not.toContain(String(Number.MAX_SAFE_INTEGER));
    const tool = (name: string) => listed.tools.find((t) => t.name === name);
    const properties = (name: string) => (tool(name)?.inputSchema.properties ?? {}) as Record<string, never>;
    // No downstream server, so no tool to allow; sampling stays (the client's model answers it).
    expect(properties('execute_code')).not.toHaveProperty('allowed_tools');
    expect(properties('execute_code')).toHaveProperty('enable_sampling');
    // The timeout caps (CODEXEC_MAX_TIMEOUT_MS, default 300000) are stated.
    for (const name of ['execute_code', 'send_to_session', 'run_script'])
      expect(JSON.stringify(properties(name).timeout_ms)).toContain('at most 300000');
    expect(JSON.stringify(properties('execute_command').timeout)).toContain('at most 300');
    // The output cap is this server's.
    expect(tool('execute_code')?.description).toContain('2,000 characters');
    // An output schema names the fields (docs/tools.md has their types and meanings).
    const output = tool('execute_code')?.outputSchema as { properties: Record<string, unknown> };
    expect(output.properties.exit_code).toEqual({});
    expect(Object.keys(output.properties)).toContain('images');
  });

  it('lists the tools in at most 24 KB to a client that shows MCP Apps views too', async () => {
    const apps = await startServer({ era, env: { CODEXEC_MAX_OUTPUT_CHARS: '2000' }, capabilities: APPS });
    try {
      const listed = await apps.client.listTools();
      // The list an apps client gets: the view-only tool and the links to the view are in it.
      expect(listed.tools.map((tool) => tool.name)).toContain('answer_approval');
      expect(listed.tools.find((tool) => tool.name === 'execute_code')?._meta).toEqual({
        ui: { resourceUri: 'ui://codexec/view' },
      });
      expect(Buffer.byteLength(JSON.stringify(listed))).toBeLessThanOrEqual(TOOLS_LIST_BUDGET);
      // A read-only tool says so, and not the hints that mean nothing for it; others say all four.
      expect(listed.tools.find((tool) => tool.name === 'list_sessions')?.annotations).toEqual({
        readOnlyHint: true,
        openWorldHint: false,
      });
      expect(listed.tools.find((tool) => tool.name === 'execute_code')?.annotations).toEqual({
        readOnlyHint: false,
        destructiveHint: true,
        idempotentHint: false,
        openWorldHint: true,
      });
    } finally {
      await apps.close();
    }
  }, 60_000);

  it('says a success in one line of facts and the output as it was printed', async () => {
    const { text, value } = await call(server, 'execute_code', { language: 'python', code: 'print(1)' });
    expect(text).toBe(`${JSON.stringify({ execution_id: value.execution_id, exit_code: 0 })}\n1\n`);
    expect(value).toMatchObject({ success: true, stdout: '1\n', stderr: '', timed_out: false });
  });

  it('says a failure with its traceback as plain text, not escaped JSON', async () => {
    const code = 'print("before")\nraise ValueError("a \\"quoted\\" reason")';
    const { text, facts, value } = await call(server, 'execute_code', { language: 'python', code });
    expect(facts).toEqual({ success: false, execution_id: value.execution_id, exit_code: 1 });
    expect(text).toContain('\nbefore\n--- stderr ---\nTraceback (most recent call last):\n');
    expect(text).toContain('ValueError: a "quoted" reason\n');
    expect(text).not.toContain('\\n');
  });

  it('says a refusal as its code and a plain sentence', async () => {
    const result = await server.client.callTool({
      name: 'send_to_session',
      arguments: { session_id: 'sess_nothere', code: 'print(1)' },
    });
    const text = (result.content as Array<{ text: string }>)[0]?.text ?? '';
    const [facts, ...rest] = text.split('\n');
    expect(JSON.parse(facts ?? '')).toEqual({ success: false, code: 'SESSION_NOT_FOUND' });
    expect(rest.join('\n')).toMatch(/^no session sess_nothere[^\n]*\n$/);
    expect(result.structuredContent).toMatchObject({ success: false, code: 'SESSION_NOT_FOUND' });
  });

  it('cuts long output at line ends and says under the mark how to read the rest, in bytes', async () => {
    const code = 'for i in range(5000): print(f"line {i}")';
    const { text, value } = await call(server, 'execute_code', { language: 'python', code });
    const stdout = value.stdout as string;
    const mark = stdout.match(
      /\n\[\.\.\. truncated (\d+) characters \.\.\.\]\n(\[the rest: read_file (.*); .*\])\n/,
    );
    expect(mark, stdout.slice(0, 300)).not.toBeNull();
    expect(text).toContain(mark?.[2]);
    // The head ends with a whole line (the line end before the mark is its own).
    const head = stdout.slice(0, mark?.index ?? 0);
    const lines = head.split('\n').length;
    expect(head.split('\n').at(-1)).toBe(`line ${lines - 1}`);
    const page = JSON.parse(mark?.[3] ?? '{}') as { execution_id: string; path: string; offset: number };
    expect(page).toEqual({
      execution_id: value.execution_id,
      path: 'stdout',
      offset: Buffer.byteLength(`${head}\n`),
    });
    const next = await callTool<{ content: string }>(server.client, 'read_file', { ...page, length: 20 });
    expect(next.value.content.startsWith(`line ${lines}\n`)).toBe(true);
    // The tail starts on a line of its own.
    expect(stdout.endsWith('line 4999\n')).toBe(true);
    expect(stdout.slice(stdout.lastIndexOf(']\n') + 2)).toMatch(/^line \d+\n/);
  });

  it('says a session send and a command alike: facts, then output', async () => {
    const started = await callTool<{ session_id: string }>(server.client, 'start_session', {
      language: 'bash',
    });
    const id = started.value.session_id;
    try {
      const sent = await call(server, 'send_to_session', { session_id: id, code: 'echo hi; echo oops >&2' });
      expect(sent.facts).toEqual({ execution_id: sent.value.execution_id, session_id: id, exit_code: 0 });
      expect(sent.text.slice(sent.text.indexOf('\n') + 1)).toBe('hi\n--- stderr ---\noops\n');
    } finally {
      await callTool(server.client, 'close_session', { session_id: id });
    }
    const command = await call(server, 'execute_command', { command: 'echo done' });
    expect(command.facts).toEqual({ exit_code: 0, execution_id: command.value.execution_id });
    expect(command.text.slice(command.text.indexOf('\n') + 1)).toBe('done\n');
  });

  it('shows a saved script and a log entry with their code as plain text', async () => {
    const code = 'print("from the library")';
    const saved = await callTool(server.client, 'save_script', {
      name: 'text-shape',
      description: 'prints a line',
      language: 'python',
      code,
    });
    expect(saved.isError, saved.text).toBe(false);
    const got = await call(server, 'get_script', { name: 'text-shape' });
    expect(got.text.endsWith(`\n${code}\n`)).toBe(true);
    expect(got.facts).not.toHaveProperty('code');
    const ran = await call(server, 'run_script', { name: 'text-shape' });
    const entry = await call(server, 'get_execution_log', { execution_id: ran.value.execution_id });
    expect(entry.text).toContain(`\nfrom the library\n--- code ---\n${code}\n`);
    // A name a typo away is offered.
    for (const tool of ['get_script', 'run_script']) {
      const missed = await callTool<{ code: string; error: string }>(server.client, tool, {
        name: 'text-shap',
      });
      expect(missed.value.code).toBe('NOT_FOUND');
      expect(missed.value.error).toBe(
        'no script named text-shap; did you mean text-shape? list_scripts shows what is saved',
      );
    }
  });
});

describe('arguments of a feature that is on', () => {
  let server: TestServer;
  beforeAll(async () => {
    const config = join(tempDir(), 'mcp.json');
    writeFileSync(
      config,
      JSON.stringify({ mcpServers: { fx: { command: process.execPath, args: [FIXTURE] } } }),
    );
    server = await startServer({ env: { CODEXEC_MCP_CONFIG: config } });
  }, 60_000);
  afterAll(() => server.close());

  it('lists allowed_tools when a downstream server is configured', async () => {
    const { tools } = await server.client.listTools();
    for (const name of ['execute_code', 'start_session'])
      expect(tools.find((t) => t.name === name)?.inputSchema.properties).toHaveProperty('allowed_tools');
  });
});
