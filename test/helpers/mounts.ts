// Operator mounts (CODEXEC_MOUNTS) as principals see them, in any sandbox mode: serve --http with
// two tokens, a directory lent to alice only and one lent to everyone; each principal runs
// one-shots (bash cold, python warm where the pool has one) and a session.
import { chmodSync, mkdirSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Client } from '@modelcontextprotocol/client';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { connectHttp, type HttpServer, startHttp } from './http.js';
import { callTool, tempDir } from './server.js';

const ALICE = 'alice-token-0123456789';
const BOB = 'bob-token-0123456789ab';

interface Run {
  readonly success: boolean;
  readonly stdout: string;
  readonly stderr: string;
}

/**
 * A directory everyone may write, and its one file: only the mount's being read-only keeps a
 * sandbox from changing them.
 */
function lentDir(name: string, content: string): string {
  const dir = join(tempDir('codexec-mount-'), name);
  mkdirSync(dir);
  chmodSync(dir, 0o777);
  chmodSync(join(dir, '..'), 0o755);
  writeFileSync(join(dir, 'note.txt'), content);
  chmodSync(join(dir, 'note.txt'), 0o666);
  return dir;
}

/**
 * The suite: `env` picks the mode; `moves` says whether a mount may have a target other than its
 * source (landlock mode: no), `held` whether the directory opened at start is what runs see after
 * a rename (a container engine is given the path).
 */
export function mountSuite(env: Record<string, string>, options: { moves: boolean; held: boolean }) {
  const own = lentDir('alice-data', 'alice only\n');
  const shared = lentDir('shared', 'for everyone\n');
  const target = options.moves ? '/data' : own;
  const sharedTarget = options.moves ? '/shared' : shared;
  let server: HttpServer;
  let alice: Client;
  let bob: Client;

  beforeAll(async () => {
    const dir = tempDir();
    const tokens = join(dir, 'tokens.json');
    writeFileSync(tokens, JSON.stringify({ alice: ALICE, bob: BOB }));
    const mounts = join(dir, 'mounts.json');
    writeFileSync(
      mounts,
      JSON.stringify([
        { source: own, ...(options.moves && { target }), principals: ['alice'] },
        { source: shared, ...(options.moves && { target: sharedTarget }), principals: ['*'] },
      ]),
    );
    server = await startHttp({ env: { ...env, CODEXEC_HTTP_TOKENS: tokens, CODEXEC_MOUNTS: mounts } });
    alice = await connectHttp(server.url, ALICE, 'modern');
    bob = await connectHttp(server.url, BOB, 'legacy');
  }, 120_000);

  afterAll(async () => {
    await alice?.close();
    await bob?.close();
    await server?.stop();
  });

  const bash = async (client: Client, code: string) =>
    (await callTool<Run>(client, 'execute_code', { language: 'bash', code })).value;

  it('lends alice her directory read-only, in one-shots of each language and in a session', async () => {
    const read = await bash(alice, `cat ${target}/note.txt ${sharedTarget}/note.txt`);
    expect(read).toMatchObject({ success: true, stdout: 'alice only\nfor everyone\n' });
    const write = await bash(
      alice,
      `echo x > ${target}/new.txt; touch ${target}/note.txt; rm ${target}/note.txt`,
    );
    expect(write.success).toBe(false);
    expect(write.stderr).toMatch(/Read-only file system|Permission denied/);
    const python = await callTool<Run>(alice, 'execute_code', {
      language: 'python',
      code: `print(open('${target}/note.txt').read(), end='')`,
    });
    expect(python.value).toMatchObject({ success: true, stdout: 'alice only\n' });
    const node = await callTool<Run>(alice, 'execute_code', {
      language: 'node',
      code: `process.stdout.write(require('fs').readFileSync('${target}/note.txt', 'utf8'))`,
    });
    expect(node.value).toMatchObject({ success: true, stdout: 'alice only\n' });
    const session = await callTool<{ session_id: string }>(alice, 'start_session', { language: 'python' });
    try {
      const sent = await callTool<Run>(alice, 'send_to_session', {
        session_id: session.value.session_id,
        code: `print(open('${target}/note.txt').read(), end='')\nopen('${target}/x', 'w')`,
      });
      expect(sent.value.stdout).toBe('alice only\n');
      expect(sent.value.stderr).toMatch(/Read-only file system|Permission denied/);
    } finally {
      await callTool(alice, 'close_session', { session_id: session.value.session_id });
    }
  });

  it('gives bob only what is lent to everyone', async () => {
    const shared = await bash(bob, `cat ${sharedTarget}/note.txt`);
    expect(shared).toMatchObject({ success: true, stdout: 'for everyone\n' });
    for (const language of ['bash', 'python'] as const) {
      const code =
        language === 'bash'
          ? `cat ${target}/note.txt; ls ${target}`
          : `import os\nprint(open('${target}/note.txt').read())`;
      const run = (await callTool<Run>(bob, 'execute_code', { language, code })).value;
      expect(run.success).toBe(false);
      expect(run.stdout).not.toContain('alice only');
      expect(run.stderr).toMatch(/No such file or directory|Permission denied/);
    }
    const session = await callTool<{ session_id: string }>(bob, 'start_session', { language: 'bash' });
    try {
      const sent = await callTool<Run>(bob, 'send_to_session', {
        session_id: session.value.session_id,
        code: `cat ${target}/note.txt`,
      });
      expect(sent.value.stdout).not.toContain('alice only');
      expect(sent.value.stderr).toMatch(/No such file or directory|Permission denied/);
    } finally {
      await callTool(bob, 'close_session', { session_id: session.value.session_id });
    }
  });

  it('lists each principal its own mounts in health', async () => {
    const ofAlice = (await callTool<{ mounts: unknown[] }>(alice, 'health', {})).value.mounts;
    expect(ofAlice).toEqual([
      { source: own, target },
      { source: shared, target: sharedTarget },
    ]);
    const ofBob = (await callTool<{ mounts: unknown[] }>(bob, 'health', {})).value.mounts;
    expect(ofBob).toEqual([{ source: shared, target: sharedTarget }]);
  });

  if (options.held)
    it('keeps lending the directory it opened when another is put at its path', async () => {
      renameSync(own, `${own}.moved`);
      const impostor = join(own, '..', 'alice-data');
      mkdirSync(impostor, { mode: 0o755 });
      writeFileSync(join(impostor, 'note.txt'), 'not the one lent\n', { mode: 0o644 });
      // (Landlock mode reads a mount at its source, which is now at its new name.)
      const read = await bash(
        alice,
        `cat ${target}/note.txt${options.moves ? '' : `; cat ${own}.moved/note.txt`}`,
      );
      if (options.moves) expect(read).toMatchObject({ success: true, stdout: 'alice only\n' });
      else
        expect(read).toMatchObject({
          stdout: 'alice only\n',
          stderr: expect.stringMatching(/Permission denied/),
        });
    });
}
