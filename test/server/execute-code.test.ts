import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { callTool, ERAS, startServer, type TestServer, textFacts } from '../helpers/server.js';

interface Result {
  success: boolean;
  execution_id: string;
  language: string;
  stdout: string;
  stderr: string;
  exit_code: number | null;
  timed_out: boolean;
  truncated: boolean;
  artifacts: string[];
  working_dir: string;
  sandbox_mode: string;
}

describe.each(ERAS)('execute_code (%s era)', (era) => {
  let server: TestServer;
  const run = (args: Record<string, unknown>) => callTool<Result>(server.client, 'execute_code', args);

  beforeAll(async () => {
    server = await startServer({ era });
  });
  afterAll(() => server.close());

  it('negotiated the era asked for', () => {
    expect(server.client.getProtocolEra()).toBe(era);
  });

  it('advertises execute_code with input and output schemas and honest annotations', async () => {
    const { tools } = await server.client.listTools();
    const tool = tools.find((t) => t.name === 'execute_code');
    expect(tool?.inputSchema.required).toEqual(['language', 'code']);
    // No host directory is open by default (CODEXEC_ALLOWED_PATHS): working_dir is not offered.
    expect(tool?.inputSchema.properties).not.toHaveProperty('working_dir');
    expect(tool?.outputSchema?.properties).toHaveProperty('execution_id');
    expect(tool?.annotations).toMatchObject({ readOnlyHint: false, destructiveHint: true });
  });

  it.each([
    ['python', 'import sys\nprint("hello from python", sys.version_info[0])', 'hello from python 3\n'],
    [
      'node',
      'const x = await Promise.resolve(41); console.log("hello from node", x + 1)',
      'hello from node 42\n',
    ],
    ['typescript', 'const n: number = 2;\nenum E { A = 40 }\nconsole.log(`ts ${E.A + n}`)', 'ts 42\n'],
    ['bash', 'greet() { echo "hello from $1"; }\ngreet bash', 'hello from bash\n'],
  ])('runs %s', async (language, code, stdout) => {
    const { isError, value, text } = await run({ language, code });
    expect(isError).toBe(false);
    expect(value).toMatchObject({
      success: true,
      language,
      stdout,
      stderr: '',
      exit_code: 0,
      timed_out: false,
    });
    expect(value.execution_id).toMatch(/^exec_[0-9a-f]{12}$/);
    expect(textFacts(text, value)).toEqual({ execution_id: value.execution_id, exit_code: 0 });
    expect(text.slice(text.indexOf('\n') + 1)).toBe(stdout);
  });

  it('lets node code use require and __dirname', async () => {
    const { value } = await run({
      language: 'node',
      code: 'console.log(require("node:path").basename(__dirname))',
    });
    expect(value.stdout.trim()).toBe(value.execution_id);
  });

  it('reports a syntax error as a failed run with stderr', async () => {
    const py = await run({ language: 'python', code: 'def broken(:\n  pass' });
    expect(py.isError).toBe(false);
    expect(py.value).toMatchObject({ success: false, exit_code: 1 });
    expect(py.value.stderr).toContain('SyntaxError');
    const ts = await run({ language: 'typescript', code: 'const = ;' });
    expect(ts.value).toMatchObject({ success: false, exit_code: 1 });
    expect(ts.value.stderr).toContain('TypeScript syntax error');
  });

  it('passes exit codes through and keeps stdout and stderr apart', async () => {
    const { value } = await run({ language: 'bash', code: 'echo to-out; echo to-err >&2; exit 7' });
    expect(value).toMatchObject({ success: false, exit_code: 7, stdout: 'to-out\n', stderr: 'to-err\n' });
    const py = await run({
      language: 'python',
      code: 'import sys\nsys.stderr.write("e")\nraise SystemExit(3)',
    });
    expect(py.value).toMatchObject({ exit_code: 3, stderr: 'e' });
  });

  it('reports created and modified artifacts, never the script file', async () => {
    const { value } = await run({
      language: 'python',
      code: 'import os\nos.makedirs("out")\nopen("out/r.csv","w").write("a,b")\nopen("note.txt","w").write("x")',
    });
    expect(value.success).toBe(true);
    expect(value.artifacts.sort()).toEqual(['note.txt', 'out/r.csv']);
    expect(readdirSync(value.working_dir).sort()).toEqual(['note.txt', 'out']);
    expect(readFileSync(join(value.working_dir, 'out/r.csv'), 'utf8')).toBe('a,b');
  });

  it('runs a 1 MB program (written through the thread pool) and one that only deletes its files', async () => {
    const big = await run({
      language: 'python',
      code: `DATA = "${'y'.repeat(1_000_000)}"\nprint(len(DATA), open(__file__).read().count(chr(121)))`,
    });
    expect(big.value).toMatchObject({ success: true, stdout: '1000000 1000000\n', artifacts: [] });
    // A run that leaves nothing behind reports nothing, and its workspace is gone.
    const none = await run({ language: 'bash', code: 'touch a; rm a' });
    expect(none.value).toMatchObject({ success: true, artifacts: [], artifacts_deleted: [] });
    await expect.poll(() => existsSync(none.value.working_dir), { timeout: 5000 }).toBe(false);
  });

  it.each([
    [{ language: 'cobol', code: 'x' }, /language/],
    [{ language: 'python', code: '' }, /code: code must not be empty/],
    [{ language: 'python', code: 42 }, /code: /],
    [{ language: 'python' }, /code: /],
    [{ language: 'python', code: 'print(1)', timeout_ms: -5 }, /timeout_ms/],
  ])('refuses bad input %o with INVALID_INPUT and keeps serving', async (args, message) => {
    const { isError, value } = await callTool<{ success: boolean; error: string; code: string }>(
      server.client,
      'execute_code',
      args,
    );
    expect(isError).toBe(true);
    expect(value).toMatchObject({ success: false, code: 'INVALID_INPUT' });
    expect(value.error).toMatch(message);
    expect((await run({ language: 'bash', code: 'echo alive' })).value.stdout).toBe('alive\n');
  });

  it('refuses code over the size limit without running it', async () => {
    const code = `# ${'x'.repeat(10_000_001)}`;
    const { isError, value } = await callTool<{ code: string; error: string }>(
      server.client,
      'execute_code',
      {
        language: 'python',
        code,
      },
    );
    expect(isError).toBe(true);
    expect(value.code).toBe('INVALID_INPUT');
    expect(value.error).toMatch(/CODEXEC_MAX_CODE_BYTES/);
  });

  it('appends a seed-format entry to the daily JSONL log', async () => {
    const { value } = await run({ language: 'python', code: 'print("logged")' });
    const day = new Date().toISOString().slice(0, 10);
    await expect
      .poll(() => readFileSync(join(server.home, 'logs', `executions-${day}.jsonl`), 'utf8'))
      .toContain(value.execution_id);
    const lines = readFileSync(join(server.home, 'logs', `executions-${day}.jsonl`), 'utf8')
      .trim()
      .split('\n');
    const entry = lines.map((line) => JSON.parse(line)).find((e) => e.execution_id === value.execution_id);
    expect(entry).toMatchObject({
      type: 'execution',
      language: 'python',
      code: 'print("logged")',
      stdout: 'logged\n',
      stderr: '',
      exit_code: 0,
      timed_out: false,
      sandbox_mode: value.sandbox_mode,
      working_dir: value.working_dir,
      artifacts: { created: [], modified: [], deleted: [] },
    });
    expect(typeof entry.duration_ms).toBe('number');
    expect(new Date(entry.executed_at).toISOString()).toBe(entry.executed_at);
  });
});
