// A fixed leak: over serve --http, bob once read alice's files in the command workspace through
// read_file {workspace: "command"}, resources/read codexec://workspace/… and execute_command cat.
// Each principal now has a command workspace of its own; the stdio user keeps CODEXEC_WORKSPACE.
import { existsSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Client } from '@modelcontextprotocol/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { allowing } from '../helpers/host-dir.js';
import { connectHttp, type HttpServer, startHttp } from '../helpers/http.js';
import { callTool, startServer, tempDir } from '../helpers/server.js';
import { buildWheel } from '../packages/fixtures.js';

const ALICE = 'alice-token-0123456789';
const BOB = 'bob-token-0123456789ab';

type Value = Record<string, unknown> & { stdout?: string; content?: string; code?: string };

describe('serve --http: a command workspace per principal', () => {
  const dir = tempDir();
  const home = tempDir();
  let server: HttpServer;
  let alice: Client;
  let bob: Client;

  beforeAll(async () => {
    const tokens = join(dir, 'tokens.json');
    writeFileSync(tokens, JSON.stringify({ alice: ALICE, bob: BOB }));
    buildWheel(dir, 'codexec_alice_pkg', '1.0.0', 21);
    server = await startHttp({
      home,
      // Host directories allowed around every workspace: a principal's is still no other's.
      env: { CODEXEC_HTTP_TOKENS: tokens, PIP_NO_INDEX: '1', PIP_FIND_LINKS: dir, ...allowing(home) },
    });
    alice = await connectHttp(server.url, ALICE, 'modern');
    bob = await connectHttp(server.url, BOB, 'legacy');
  }, 60_000);
  afterAll(async () => {
    await alice?.close();
    await bob?.close();
    await server?.stop();
    rmSync(home, { recursive: true, force: true });
    rmSync(dir, { recursive: true, force: true });
  });

  it("bob sees nothing of alice's command workspace through any tool or resource", async () => {
    const wrote = await callTool<Value>(alice, 'write_file', {
      workspace: 'command',
      path: 'notes/secret.txt',
      content: 'alice only',
    });
    expect(wrote.value.success).toBe(true);
    const made = await callTool<Value>(alice, 'execute_command', {
      command: 'echo made by alice > made.txt; ls',
    });
    expect(made.value.stdout).toBe('made.txt\nnotes\n');

    for (const path of ['notes/secret.txt', 'made.txt']) {
      const read = await callTool<Value>(bob, 'read_file', { workspace: 'command', path });
      expect({ path, code: read.value.code }).toEqual({ path, code: 'NOT_FOUND' });
      await expect(bob.readResource({ uri: `codexec://workspace/${path}` })).rejects.toThrow();
    }
    const listed = await callTool<Value>(bob, 'execute_command', {
      command: 'ls -A; cat made.txt notes/secret.txt 2>&1; true',
    });
    expect(listed.value.stdout).not.toContain('alice');
    expect(listed.value.stdout).not.toContain('made.txt\n');
    expect(listed.value.work_dir).not.toBe(made.value.work_dir);

    const own = await callTool<Value>(alice, 'read_file', { workspace: 'command', path: 'made.txt' });
    expect(own.value.content).toBe('made by alice\n');
    const resource = await alice.readResource({ uri: 'codexec://workspace/notes/secret.txt' });
    expect(resource.contents[0]).toMatchObject({ text: 'alice only' });
  }, 60_000);

  it("neither principal can point work_dir at the other's workspace", async () => {
    const mine = await callTool<Value>(alice, 'execute_command', { command: 'pwd' });
    const theirs = String(mine.value.work_dir);
    const refused = await callTool<Value>(bob, 'execute_command', { command: 'ls', work_dir: theirs });
    expect(refused.value.code).toBe('FORBIDDEN_PATH');
    expect(refused.value.error).toContain('may not use');
    const code = await callTool<Value>(bob, 'execute_code', {
      language: 'bash',
      code: 'ls',
      working_dir: theirs,
    });
    expect(code.value.code).toBe('FORBIDDEN_PATH');
    expect(code.value.error).toContain('may not use');
  });

  it("a global install is the installing principal's own: bob's and the stdio user's runs do not see it", async () => {
    const code = 'import codexec_alice_pkg\nprint(codexec_alice_pkg.VALUE)';
    const installed = await callTool<Value>(alice, 'install_package', {
      language: 'python',
      package: 'codexec-alice-pkg',
    });
    expect(installed.value).toMatchObject({ success: true, version: '1.0.0' });
    for (let i = 0; i < 2; i++) {
      const mine = await callTool<Value>(alice, 'execute_code', { language: 'python', code });
      expect(mine.value).toMatchObject({ success: true, stdout: '21\n' });
      const theirs = await callTool<Value>(bob, 'execute_code', { language: 'python', code });
      expect(theirs.value.success).toBe(false);
      expect(theirs.value.stderr).toContain('ModuleNotFoundError');
    }
    const session = await callTool<Value>(bob, 'start_session', { language: 'python' });
    const sent = await callTool<Value>(bob, 'send_to_session', {
      session_id: session.value.session_id,
      code,
    });
    expect(sent.value.stderr).toContain('ModuleNotFoundError');
    expect(existsSync(join(home, 'envs', 'python'))).toBe(false);
  }, 60_000);

  it('the stdio user keeps CODEXEC_WORKSPACE, and sees no principal there', async () => {
    const local = await startServer({ home });
    try {
      const ran = await callTool<Value>(local.client, 'execute_command', { command: 'pwd; ls -A' });
      expect(ran.value.work_dir).toBe(join(home, 'workspace'));
      expect(ran.value.stdout).toBe(`${join(home, 'workspace')}\n`);
      expect(existsSync(join(home, 'workspace', 'made.txt'))).toBe(false);
    } finally {
      await local.close();
    }
  }, 60_000);
});
