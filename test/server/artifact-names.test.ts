// File names code writes, as the model reads them: names that are not UTF-8 are listed, escaped
// (before: left out silently); control characters (ESC, newline, RTL override, C1) are escaped in
// artifact lists, resource link names, read_file's path echo and errors naming a path (util/names).
// Secrets are masked in artifact names, resource links, read_file text (utf8 and
// base64) and resources/read text, as in run output.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { callTool, startServer, type TestServer } from '../helpers/server.js';

interface Block {
  type: string;
  uri?: string;
  name?: string;
}
interface Run {
  execution_id: string;
  stdout: string;
  stderr: string;
  artifacts: string[];
  artifacts_deleted: string[];
}

/** Characters no text the model reads may carry raw: C0, DEL, C1, bidi and other format controls. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what it looks for
const CONTROL = /[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/;

const MAKES = `
import os
names = [b"bad\\xff\\xfename.txt", "esc\\x1b[31mred.txt".encode(), "rtl\\u202etxt.exe".encode(),
         b"new\\nline.txt", b"back\\\\slash.txt", "c1\\u0085.txt".encode(), "caf\\u00e9.txt".encode()]
for name in names:
    with open(name, "wb") as f:
        f.write(b"x")
os.mkdir(b"dir\\xc3")
open(b"dir\\xc3/inner.txt", "wb").close()
print("made")
`;
const SHOWN = [
  'back\\\\slash.txt',
  'bad\\xff\\xfename.txt',
  'c1\\u0085.txt',
  'café.txt',
  'dir\\xc3/inner.txt',
  'esc\\x1b[31mred.txt',
  'new\\x0aline.txt',
  'rtl\\u202etxt.exe',
];

describe('names that are not UTF-8 or hold control characters', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startServer();
  });
  afterAll(() => server.close());

  it('are listed escaped in artifacts, resource links and the log; the links read back', async () => {
    const result = await server.client.callTool({
      name: 'execute_code',
      arguments: { language: 'python', code: MAKES },
    });
    const value = result.structuredContent as unknown as Run;
    expect(value.stdout).toBe('made\n');
    expect([...value.artifacts].sort()).toEqual(SHOWN);
    const links = (result.content as Block[]).filter((block) => block.type === 'resource_link');
    // No link for a name that is not UTF-8 (no URI reads it back); the others percent-encoded.
    expect(links.map((link) => link.name).sort()).toEqual(SHOWN.filter((name) => !/\\x[89a-f]/.test(name)));
    for (const link of links) {
      expect(link.name).not.toMatch(CONTROL);
      expect(link.uri).not.toMatch(CONTROL);
    }
    const esc = links.find((link) => link.name === 'esc\\x1b[31mred.txt');
    expect(esc?.uri).toBe(`codexec://exec/${value.execution_id}/esc%1B%5B31mred.txt`);
    expect((await server.client.readResource({ uri: esc?.uri as string })).contents[0]).toMatchObject({
      text: 'x',
    });
    const entry = await callTool<Record<string, string[]>>(server.client, 'get_execution_log', {
      execution_id: value.execution_id,
    });
    expect([...(entry.value.artifacts_created ?? [])].sort()).toEqual(SHOWN);
  });

  it('are escaped in artifacts_deleted', async () => {
    await callTool(server.client, 'execute_command', { command: "printf x > $'gone\\xff\\x1b.txt'" });
    const gone = await callTool<Run>(server.client, 'execute_command', { command: 'rm gone*' });
    expect(gone.value.artifacts_deleted).toEqual(['gone\\xff\\x1b.txt']);
  });

  it("are escaped in read_file's path echo and in errors naming a path", async () => {
    await callTool(server.client, 'execute_command', { command: "printf hi > $'rtl\\u202eexe.txt'" });
    const read = await callTool<{ path: string; content: string }>(server.client, 'read_file', {
      workspace: 'command',
      path: 'rtl\u202eexe.txt',
    });
    expect(read.value).toMatchObject({ path: 'rtl\\u202eexe.txt', content: 'hi' });
    const missing = await callTool<{ error: string; code: string }>(server.client, 'read_file', {
      workspace: 'command',
      path: 'no\u001b[2Jsuch\u202e.txt',
    });
    expect(missing.value.code).toBe('NOT_FOUND');
    expect(missing.value.error).toContain('no\\x1b[2Jsuch\\u202e.txt');
    expect(missing.value.error).not.toMatch(CONTROL);
    const upward = await callTool<{ error: string }>(server.client, 'read_file', {
      workspace: 'command',
      path: '../\u202eetc',
    });
    expect(upward.value.error).not.toMatch(CONTROL);
  });
});

const SECRET = 'Zx81-secret-value-Qw27';

describe('the secrets filter on names, links and read_file', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startServer({ env: { MY_API_KEY: SECRET } });
  });
  afterAll(() => server.close());

  // The code never sees the server's env: it builds the value itself (reversed in its source).
  const reversed = [...SECRET].reverse().join('');
  const build = `s="${reversed}"[::-1]`;

  it('masks the value in artifact names, resource links and the log entry', async () => {
    const result = await server.client.callTool({
      name: 'execute_code',
      arguments: {
        language: 'python',
        code: `${build}\nimport os\nos.mkdir("d-" + s)\nopen("d-" + s + "/key-" + s + ".txt", "w").write("k=" + s)`,
      },
    });
    const value = result.structuredContent as unknown as Run;
    expect(value.artifacts).toEqual(['d-***/key-***.txt']);
    const [link] = (result.content as Block[]).filter((block) => block.type === 'resource_link');
    expect(link).toMatchObject({
      name: 'd-***/key-***.txt',
      uri: `codexec://exec/${value.execution_id}/d-***/key-***.txt`,
    });
    expect(JSON.stringify(result)).not.toContain(SECRET);
    const logs = join(server.home, 'logs');
    // Every record (executions, sessions, audit), not the audit's lock, which comes and goes.
    const text = readdirSync(logs)
      .filter((name) => name.endsWith('.jsonl'))
      .map((name) => readFileSync(join(logs, name), 'utf8'))
      .join('');
    expect(text).toContain('d-***/key-***.txt');
    expect(text).not.toContain(SECRET);
  });

  it('masks the value in read_file content (utf8 and base64) and resources/read text', async () => {
    const made = await callTool<Run>(server.client, 'execute_command', {
      command: `python3 -c 'exec(${JSON.stringify(build)}); open("notes.txt", "w").write("token=" + s + "\\n")'`,
    });
    expect(made.value.artifacts).toEqual(['notes.txt']);
    const utf8 = await callTool<{ content: string }>(server.client, 'read_file', {
      workspace: 'command',
      path: 'notes.txt',
    });
    expect(utf8.value.content).toBe('token=***\n');
    const base64 = await callTool<{ content: string }>(server.client, 'read_file', {
      workspace: 'command',
      path: 'notes.txt',
      encoding: 'base64',
    });
    expect(Buffer.from(base64.value.content, 'base64').toString()).toBe('token=***\n');
    const resource = await server.client.readResource({ uri: 'codexec://workspace/notes.txt' });
    expect(resource.contents[0]).toMatchObject({ text: 'token=***\n' });
  });
});
