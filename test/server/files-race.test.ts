// A critical finding of a security review, as an attacker ran it: code in a session swaps a real directory
// and a symlink to a root-only host directory (renameat2 RENAME_EXCHANGE, in a loop on a thread)
// while the client reads and writes through that path. Neither tool may reach the host.
import { chmodSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { callTool, startServer, type TestServer, tempDir } from '../helpers/server.js';

const SECRET = 'HOST-SECRET-0f3a';
const TRIES = 400;

interface FileAnswer {
  success: boolean;
  content?: string;
  code?: string;
}

/** Python for the session: a/d (a real dir with `secret`) and a/l (→ host) swapped without end. */
function swapper(host: string): string {
  return [
    'import ctypes, os, threading',
    'libc = ctypes.CDLL(None, use_errno=True)',
    "os.makedirs('a/d', exist_ok=True)",
    "open('a/d/secret', 'w').write('inside')",
    `os.symlink(${JSON.stringify(host)}, 'a/l')`,
    'def loop():',
    '    while True:',
    "        libc.renameat2(-100, b'a/d', -100, b'a/l', 2)",
    'threading.Thread(target=loop, daemon=True).start()',
    "print('swapping')",
  ].join('\n');
}

describe('read_file / write_file against a path swapped under them', () => {
  let server: TestServer;
  let session: string;
  const host = tempDir('codexec-host-');
  beforeAll(async () => {
    writeFileSync(join(host, 'secret'), SECRET, { mode: 0o600 });
    mkdirSync(join(host, 'sub'));
    chmodSync(host, 0o700);
    server = await startServer();
    const started = await callTool<{ session_id: string }>(server.client, 'start_session', {
      language: 'python',
    });
    session = started.value.session_id;
    const sent = await callTool<{ stdout: string }>(server.client, 'send_to_session', {
      session_id: session,
      code: swapper(host),
    });
    expect(sent.value.stdout.trim()).toBe('swapping');
  });
  afterAll(() => server.close());

  it(`never returns the host file (${TRIES} reads while the swap runs)`, async () => {
    const seen = new Set<string>();
    for (let i = 0; i < TRIES; i++) {
      const read = await callTool<FileAnswer>(server.client, 'read_file', {
        session_id: session,
        path: 'a/d/secret',
      });
      seen.add(read.value.success ? `content:${read.value.content}` : `code:${read.value.code}`);
      expect(read.value.content ?? '').not.toContain(SECRET);
    }
    // The swap really raced the reads: both sides of it were seen.
    expect(seen).toContain('content:inside');
    expect([...seen].some((answer) => answer === 'code:FORBIDDEN_PATH')).toBe(true);
  });

  it(`never writes into the host directory (${TRIES} writes while the swap runs)`, async () => {
    let written = 0;
    for (let i = 0; i < TRIES; i++) {
      const write = await callTool<FileAnswer>(server.client, 'write_file', {
        session_id: session,
        path: i % 2 === 0 ? 'a/d/planted' : 'a/d/sub/planted',
        content: 'x',
      });
      if (write.value.success) written++;
    }
    expect(written).toBeGreaterThan(0);
    expect(readdirSync(host).sort()).toEqual(['secret', 'sub']);
    expect(readdirSync(join(host, 'sub'))).toEqual([]);
  });
});
