import { existsSync, lstatSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { callTool, ERAS, startServer, type TestServer, tempDir } from '../helpers/server.js';

interface Written {
  success: boolean;
  path: string;
  bytes: number;
  working_dir: string;
  code?: string;
  error?: string;
}
interface Read extends Written {
  encoding: string;
  content: string;
}

const ALL_BYTES = Buffer.from(Array.from({ length: 256 }, (_, i) => i));

describe.each(ERAS)('write_file / read_file (%s era)', (era) => {
  let server: TestServer;
  let session: string;
  let sessionDir: string;
  const outside = tempDir('codexec-outside-');
  beforeAll(async () => {
    server = await startServer({ era });
    const started = await callTool<{ session_id: string; working_dir: string }>(
      server.client,
      'start_session',
      {
        language: 'python',
      },
    );
    session = started.value.session_id;
    sessionDir = started.value.working_dir;
  });
  afterAll(() => server.close());

  const send = (code: string) =>
    callTool<{ success: boolean; stdout: string; stderr: string }>(server.client, 'send_to_session', {
      session_id: session,
      code,
    });

  it('round-trips text into a session; the session code reads and changes it; read_file sees the change', async () => {
    const written = await callTool<Written>(server.client, 'write_file', {
      session_id: session,
      path: 'in/deep/note.txt',
      content: 'héllo ✓\n',
    });
    expect(written.isError).toBe(false);
    expect(written.value.bytes).toBe(Buffer.byteLength('héllo ✓\n'));
    const used = await send(
      "print(open('in/deep/note.txt', encoding='utf-8').read().strip())\n" +
        "_ = open('in/deep/note.txt', 'a', encoding='utf-8').write('from code\\n')\n" +
        "_ = open('made.txt', 'w').write('made by code')",
    );
    expect(used.value.stderr).toBe('');
    expect(used.value.stdout.trim()).toBe('héllo ✓');
    const back = await callTool<Read>(server.client, 'read_file', {
      session_id: session,
      path: 'in/deep/note.txt',
    });
    expect(back.value.content).toBe('héllo ✓\nfrom code\n');
    const made = await callTool<Read>(server.client, 'read_file', { session_id: session, path: 'made.txt' });
    expect(made.value.content).toBe('made by code');
  });

  it('round-trips all 256 byte values with base64, and utf8 reading of binary is refused naming base64', async () => {
    const written = await callTool<Written>(server.client, 'write_file', {
      session_id: session,
      path: 'bin.dat',
      content: ALL_BYTES.toString('base64'),
      encoding: 'base64',
    });
    expect(written.value.bytes).toBe(256);
    const check = await send("d = open('bin.dat','rb').read(); print(len(d), d == bytes(range(256)))");
    expect(check.value.stdout.trim()).toBe('256 True');
    const back = await callTool<Read>(server.client, 'read_file', {
      session_id: session,
      path: 'bin.dat',
      encoding: 'base64',
    });
    expect(Buffer.from(back.value.content, 'base64').equals(ALL_BYTES)).toBe(true);
    const asText = await callTool<Read>(server.client, 'read_file', { session_id: session, path: 'bin.dat' });
    expect(asText.isError).toBe(true);
    expect(asText.value.error).toContain('base64');
  });

  it('writes into the command workspace, which execute_command then uses', async () => {
    const written = await callTool<Written>(server.client, 'write_file', {
      workspace: 'command',
      path: 'data/in.txt',
      content: 'alpha\nbeta\n',
    });
    expect(written.isError).toBe(false);
    const run = await callTool<{ stdout: string }>(server.client, 'execute_command', {
      command: 'wc -l < data/in.txt && echo gamma >> data/in.txt',
    });
    expect(run.value.stdout.trim()).toBe('2');
    const back = await callTool<Read>(server.client, 'read_file', {
      workspace: 'command',
      path: 'data/in.txt',
    });
    expect(back.value.content).toBe('alpha\nbeta\ngamma\n');
  });

  it('refuses every escape with FORBIDDEN_PATH and writes nothing outside', async () => {
    // Made by code inside the workspace: a symlink to /etc, to the outside dir, a chain, a FIFO.
    const made = await send(
      'import os\n' +
        "os.symlink('/etc', 'etc_link')\n" +
        `os.symlink(${JSON.stringify(outside)}, 'out_dir')\n` +
        "os.symlink('/etc/passwd', 'pw')\n" +
        "os.symlink('pw', 'chain1'); os.symlink('chain1', 'chain2')\n" +
        `os.symlink(${JSON.stringify(join(outside, 'new.txt'))}, 'dangling')\n` +
        "os.mkfifo('fifo')\n" +
        "os.makedirs('adir', exist_ok=True)\n" +
        "print('ok')",
    );
    expect(made.value.stdout.trim()).toBe('ok');
    const escapes = [
      '../x',
      '../../etc/passwd',
      'a/../../x',
      '/etc/passwd',
      join(outside, 'abs.txt'),
      'etc_link/passwd',
      'etc_link/codexec-new',
      'out_dir/new.txt',
      'out_dir/sub/new.txt',
      'pw',
      'chain2',
      'dangling',
      'fifo',
      'adir',
      '.',
    ];
    for (const path of escapes) {
      const w = await callTool<Written>(server.client, 'write_file', {
        session_id: session,
        path,
        content: 'x',
      });
      expect({ path, isError: w.isError, code: w.value.code }).toEqual({
        path,
        isError: true,
        code: 'FORBIDDEN_PATH',
      });
      const r = await callTool<Read>(server.client, 'read_file', { session_id: session, path });
      expect({ path, isError: r.isError, code: r.value.code }).toEqual({
        path,
        isError: true,
        code: 'FORBIDDEN_PATH',
      });
    }
    expect(readdirSync(outside)).toEqual([]);
    expect(existsSync('/etc/codexec-new')).toBe(false);
    expect(existsSync(join(sessionDir, 'x'))).toBe(false);
    expect(lstatSync(join(sessionDir, 'fifo')).isFIFO()).toBe(true);
  });

  it('refuses an unknown session, a missing file, a bad target and content over the size limit', async () => {
    const unknown = await callTool<Written>(server.client, 'write_file', {
      session_id: 'sess_000000000000',
      path: 'a.txt',
      content: 'x',
    });
    expect(unknown.value.code).toBe('SESSION_NOT_FOUND');
    const missing = await callTool<Read>(server.client, 'read_file', {
      session_id: session,
      path: 'nope.txt',
    });
    expect(missing.value.code).toBe('NOT_FOUND');
    const both = await callTool<Read>(server.client, 'read_file', {
      session_id: session,
      workspace: 'command',
      path: 'a',
    });
    expect(both.value.code).toBe('INVALID_INPUT');
    const neither = await callTool<Read>(server.client, 'read_file', { path: 'a' });
    expect(neither.value.code).toBe('INVALID_INPUT');
  });
});

describe('write_file / read_file limits and switches', () => {
  it('refuses files over CODEXEC_MAX_FILE_TRANSFER_BYTES both ways', async () => {
    const server = await startServer({ env: { CODEXEC_MAX_FILE_TRANSFER_BYTES: '1000' } });
    try {
      const big = await callTool<Written>(server.client, 'write_file', {
        workspace: 'command',
        path: 'big.txt',
        content: 'x'.repeat(1001),
      });
      expect(big.value.code).toBe('LIMIT_REACHED');
      expect(big.value.error).toContain('CODEXEC_MAX_FILE_TRANSFER_BYTES');
      const fits = await callTool<Written>(server.client, 'write_file', {
        workspace: 'command',
        path: 'ok.txt',
        content: 'x'.repeat(1000),
      });
      expect(fits.isError).toBe(false);
      await callTool(server.client, 'execute_command', { command: 'head -c 2000 /dev/zero > big.bin' });
      const read = await callTool<Read>(server.client, 'read_file', {
        workspace: 'command',
        path: 'big.bin',
      });
      expect(read.value.code).toBe('LIMIT_REACHED');
    } finally {
      await server.close();
    }
  });

  it('registers read_file but not write_file when CODEXEC_ENABLED=false', async () => {
    const server = await startServer({ env: { CODEXEC_ENABLED: 'false' } });
    try {
      const names = (await server.client.listTools()).tools.map((tool) => tool.name);
      expect(names).toContain('read_file');
      expect(names).not.toContain('write_file');
    } finally {
      await server.close();
    }
  });
});
