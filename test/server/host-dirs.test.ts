// Host directories by allowlist, held by descriptor, run as their owner. The attacks as a hostile
// caller ran them on a root server: a caller-chosen working_dir lent a root-owned directory to the
// sandbox (a trojan replaced /usr/local/bin/tool); a session's directory renamed and replaced by a
// symlink to / made read_file, write_file and resources/read reach the host.

import { type ChildProcess, spawn } from 'node:child_process';
import {
  chmodSync,
  chownSync,
  mkdirSync,
  readFileSync,
  renameSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isRunUid } from '../../src/sandbox/landlock/uids.js';
import { allowing, OWNER, ownedDir } from '../helpers/host-dir.js';
import { IS_ROOT } from '../helpers/mode.js';
import { callTool, startServer, type TestServer, tempDir } from '../helpers/server.js';

interface Refusal {
  success: false;
  error: string;
  code: string;
}
interface Run {
  success: boolean;
  stdout: string;
  stderr: string;
  working_dir: string;
  execution_id: string;
}

function ownedSub(parent: string, name: string): string {
  const dir = join(parent, name);
  mkdirSync(dir);
  if (IS_ROOT) chownSync(dir, OWNER.uid, OWNER.gid);
  return dir;
}

describe('working_dir with default settings', () => {
  let server: TestServer;
  const dir = ownedDir();
  beforeAll(async () => {
    server = await startServer();
  });
  afterAll(() => server.close());

  it.each([
    ['execute_code', { language: 'bash', code: 'id', working_dir: dir }],
    ['start_session', { language: 'bash', working_dir: dir }],
    ['execute_command', { command: 'id', work_dir: dir }],
  ])('%s is refused, naming CODEXEC_ALLOWED_PATHS', async (tool, args) => {
    const call = await callTool<Refusal>(server.client, tool, args);
    expect(call.isError).toBe(true);
    expect(call.value.code).toBe('FORBIDDEN_PATH');
    expect(call.value.error).toContain('CODEXEC_ALLOWED_PATHS');
  });

  it('still runs code in a fresh workspace', async () => {
    const call = await callTool<Run>(server.client, 'execute_code', { language: 'bash', code: 'echo ok' });
    expect(call.value.stdout).toBe('ok\n');
  });
});

describe('working_dir beneath CODEXEC_ALLOWED_PATHS', () => {
  let server: TestServer;
  const root = tempDir('codexec-allowed-');
  const user = ownedSub(root, 'project');
  // A root-owned directory with a root-owned program in it, as /usr/local/bin would be.
  const system = join(root, 'bin');
  mkdirSync(system);
  writeFileSync(join(system, 'tool'), '#!/bin/sh\necho real\n', { mode: 0o755 });
  beforeAll(async () => {
    writeFileSync(join(user, 'mine.txt'), 'before');
    if (IS_ROOT) chownSync(join(user, 'mine.txt'), OWNER.uid, OWNER.gid);
    server = await startServer({ env: allowing(root) });
  });
  afterAll(() => server.close());

  it('a directory outside the allowed roots is refused', async () => {
    const call = await callTool<Refusal>(server.client, 'execute_code', {
      language: 'bash',
      code: 'id',
      working_dir: tempDir(),
    });
    expect(call.value.code).toBe('FORBIDDEN_PATH');
    expect(call.value.error).toContain('outside CODEXEC_ALLOWED_PATHS');
  });

  it('tells nobody whether a path outside the roots exists; a missing one inside is named missing', async () => {
    // The attack: /root/.bashrc answered "outside", /root/zzz "does not exist", to any caller.
    const hidden = tempDir('codexec-hidden-');
    mkdirSync(join(hidden, 'there'));
    chmodSync(hidden, 0o700);
    const link = join(user, 'out');
    symlinkSync(hidden, link);
    // Links code in the root could plant: to what exists out there, and to what does not.
    symlinkSync(join(hidden, 'there'), join(user, 'alive'));
    symlinkSync(join(hidden, 'missing'), join(user, 'dangling'));
    const answer = async (working_dir: string) => {
      const call = await callTool<Refusal>(server.client, 'execute_code', {
        language: 'bash',
        code: 'id',
        working_dir,
      });
      return [call.value.code, call.value.error.replace(working_dir, 'P')];
    };
    const outside = await answer(join(hidden, 'there'));
    expect(outside[0]).toBe('FORBIDDEN_PATH');
    for (const probe of [
      join(hidden, 'missing'),
      join(hidden, 'missing', 'deeper'),
      join(link, 'missing'),
      join(user, 'alive'),
      join(user, 'dangling'),
      join(user, 'dangling', 'deeper'),
    ])
      expect(await answer(probe), probe).toEqual(outside);
    expect(await answer(join(user, 'missing'))).toEqual([
      'INVALID_INPUT',
      'working_dir P does not exist; create it first or omit working_dir',
    ]);
  });

  it('the trojan attack: a root-owned directory is never lent, its program never replaced', async () => {
    const call = await callTool<Refusal | Run>(server.client, 'execute_code', {
      language: 'bash',
      code: "printf '#!/bin/sh\\necho TROJAN\\n' > tool",
      working_dir: system,
    });
    if (IS_ROOT) {
      expect(call.isError).toBe(true);
      expect((call.value as Refusal).code).toBe('FORBIDDEN_PATH');
      expect((call.value as Refusal).error).toContain('owned by root');
    } else {
      expect(call.value.success).toBe(false); // the server's own user may not write there either
    }
    expect(readFileSync(join(system, 'tool'), 'utf8')).toBe('#!/bin/sh\necho real\n');
    expect(statSync(join(system, 'tool')).uid).toBe(0);
    expect(statSync(system).uid).toBe(0);
  });

  it("code runs as the directory's owner; files keep their owner and nothing is lent", async () => {
    const call = await callTool<Run>(server.client, 'execute_code', {
      language: 'python',
      code: [
        'import os',
        "print(os.getuid(), os.stat('.').st_uid, os.stat('mine.txt').st_uid)",
        "open('new.txt', 'w').write('x')",
        "open('mine.txt', 'a').write(' after')",
      ].join('\n'),
      working_dir: user,
    });
    expect(call.value.success).toBe(true);
    const uid = String(OWNER.uid);
    expect(call.value.stdout.trim()).toBe(`${uid} ${uid} ${uid}`);
    expect(call.value.working_dir).toBe(user);
    expect(statSync(join(user, 'new.txt')).uid).toBe(OWNER.uid);
    expect(statSync(join(user, 'mine.txt')).uid).toBe(OWNER.uid);
    expect(readFileSync(join(user, 'mine.txt'), 'utf8')).toBe('before after');
    expect(statSync(user).uid).toBe(OWNER.uid);
  });

  it('execute_command in an allowed directory runs as its owner too', async () => {
    const call = await callTool<{ success: boolean; stdout: string; work_dir: string }>(
      server.client,
      'execute_command',
      { command: 'id -u && touch cmd.txt', work_dir: user },
    );
    expect(call.value.success).toBe(true);
    expect(call.value.stdout.trim()).toBe(String(OWNER.uid));
    expect(statSync(join(user, 'cmd.txt')).uid).toBe(OWNER.uid);
  });

  it('a symlink on the way is refused', async () => {
    const link = join(root, 'link');
    symlinkSync('/', link);
    const call = await callTool<Refusal>(server.client, 'execute_code', {
      language: 'bash',
      code: 'id',
      working_dir: join(link, 'tmp'),
    });
    expect(call.value.code).toBe('FORBIDDEN_PATH');
  });
});

describe('a session directory renamed and replaced by a symlink to /', () => {
  let server: TestServer;
  let session: string;
  const root = tempDir('codexec-allowed-');
  const x = ownedSub(root, 'X');
  const a = ownedSub(x, 'a');
  beforeAll(async () => {
    server = await startServer({ env: allowing(root) });
    const started = await callTool<{ session_id: string }>(server.client, 'start_session', {
      language: 'python',
      working_dir: a,
    });
    session = started.value.session_id;
  });
  afterAll(() => server.close());

  it('a run around the live session directory is refused, the same directory is shared', async () => {
    const around = await callTool<Refusal>(server.client, 'execute_code', {
      language: 'bash',
      code: 'mv a b && ln -s / a',
      working_dir: x,
    });
    expect(around.value.code).toBe('FORBIDDEN_PATH');
    expect(around.value.error).toContain('another live run or session');
    const inside = ownedSub(a, 'in');
    const nested = await callTool<Refusal>(server.client, 'start_session', {
      language: 'bash',
      working_dir: inside,
    });
    expect(nested.value.code).toBe('FORBIDDEN_PATH');
    const same = await callTool<Run>(server.client, 'execute_code', {
      language: 'bash',
      code: 'pwd',
      working_dir: a,
    });
    expect(same.value.stdout.trim()).toBe(a);
  });

  it('file tools and resources keep to the directory the session holds', async () => {
    // Whoever can rename it (the host's user, another program): the swap happens anyway.
    renameSync(a, join(x, 'b'));
    symlinkSync('/', a);
    const read = await callTool<Refusal>(server.client, 'read_file', {
      session_id: session,
      path: 'etc/passwd',
    });
    expect(read.isError).toBe(true);
    expect(read.value.code).toBe('NOT_FOUND');
    const wrote = await callTool<{ success: boolean }>(server.client, 'write_file', {
      session_id: session,
      path: 'planted.txt',
      content: 'held',
    });
    expect(wrote.value.success).toBe(true);
    expect(readFileSync(join(x, 'b', 'planted.txt'), 'utf8')).toBe('held');
    expect(statSync(join(x, 'b', 'planted.txt')).uid).toBe(OWNER.uid);
    await expect(
      server.client.readResource({ uri: `codexec://session/${session}/etc/passwd` }),
    ).rejects.toThrow(/not found|no such file/i);
    const inside = await server.client.readResource({ uri: `codexec://session/${session}/planted.txt` });
    expect((inside.contents[0] as { text: string }).text).toBe('held');
  });
});

describe("an ended run's directory replaced by a symlink", () => {
  let server: TestServer;
  const root = tempDir('codexec-allowed-');
  const c = ownedSub(root, 'c');
  beforeAll(async () => {
    server = await startServer({ env: allowing(root) });
  });
  afterAll(() => server.close());

  it('codexec://exec/<id>/… does not follow it', async () => {
    const run = await callTool<Run>(server.client, 'execute_code', {
      language: 'bash',
      code: 'echo mine > out.txt',
      working_dir: c,
    });
    expect(run.value.success).toBe(true);
    const uri = (name: string) => `codexec://exec/${run.value.execution_id}/${name}`;
    const before = await server.client.readResource({ uri: uri('out.txt') });
    expect((before.contents[0] as { text: string }).text).toBe('mine\n');
    renameSync(c, join(root, 'd'));
    symlinkSync('/', c);
    await expect(server.client.readResource({ uri: uri('etc/passwd') })).rejects.toThrow();
    const again = await callTool<Refusal>(server.client, 'execute_code', {
      language: 'bash',
      code: 'cat etc/passwd',
      working_dir: c,
    });
    expect(again.value.code).toBe('FORBIDDEN_PATH');
  });
});

describe("landlock mode: host directories and codexec's own", () => {
  const root = tempDir('codexec-allowed-');
  // Landlock binds nothing: the owner must be able to pass through the root to its directory.
  chmodSync(root, 0o755);
  const user = ownedSub(root, 'project');
  const uid = async (server: TestServer, args: Record<string, unknown>) => {
    const call = await callTool<Run>(server.client, 'execute_code', {
      language: 'bash',
      code: 'id -u',
      ...args,
    });
    expect(call.value.stderr).toBe('');
    return call.value.stdout.trim();
  };
  // A root server's other runs: each a uid of its own (not a login user's); an ordinary user's: itself.
  const sandboxed = (id: string) => (IS_ROOT ? isRunUid(Number(id)) : id === String(OWNER.uid));

  it.runIf(IS_ROOT)(
    "a login user is never lent a way into codexec's directories: a closed home refuses its run",
    async () => {
      // A home of 0700: the owner could reach its run's workspace only through an ACL.
      const server = await startServer({
        home: tempDir(),
        env: { ...allowing(root), CODEXEC_SANDBOX_MODE: 'landlock' },
      });
      try {
        const call = await callTool<Refusal>(server.client, 'execute_code', {
          language: 'bash',
          code: 'id -u',
          working_dir: user,
        });
        expect(call.value.code).toBe('SANDBOX_UNAVAILABLE');
        expect(call.value.error).toContain('never to a login user');
        expect(sandboxed(await uid(server, {}))).toBe(true); // the other runs go on
      } finally {
        await server.close();
      }
    },
  );

  it('where the owner can reach the workspaces, it runs as the owner, and the other runs go on', async () => {
    const home = tempDir();
    chmodSync(home, 0o711);
    const server = await startServer({ home, env: { ...allowing(root), CODEXEC_SANDBOX_MODE: 'landlock' } });
    try {
      expect(sandboxed(await uid(server, {}))).toBe(true);
      expect(await uid(server, { working_dir: user })).toBe(String(OWNER.uid));
      expect(sandboxed(await uid(server, {}))).toBe(true);
      const session = await callTool<{ success: boolean }>(server.client, 'start_session', {
        language: 'python',
      });
      expect(session.value.success).toBe(true);
    } finally {
      await server.close();
    }
  });
});

/** Python that swaps `a` and `b` (RENAME_EXCHANGE) without end, until killed. */
const SWAPPER = [
  'import ctypes, sys',
  'libc = ctypes.CDLL(None, use_errno=True)',
  'a, b = sys.argv[1].encode(), sys.argv[2].encode()',
  'print("swapping", flush=True)',
  'while True: libc.renameat2(-100, a, -100, b, 2)',
].join('\n');

describe.each(['namespace', 'landlock'])(
  '%s mode: the path swapped between the check and the sandbox',
  (mode) => {
    let server: TestServer;
    let swapper: ChildProcess | undefined;
    const root = tempDir('codexec-allowed-');
    chmodSync(root, 0o755);
    const user = ownedSub(root, 'u');
    const race = ownedSub(user, 'race');
    // A root-owned directory the owner's code must never get as its working directory.
    const forbidden = join(root, 'rootdir');
    mkdirSync(forbidden, { mode: 0o755 });
    writeFileSync(join(forbidden, 'ROOTMARKER'), 'x');
    const evil = join(user, 'evil');
    symlinkSync(forbidden, evil);
    beforeAll(async () => {
      // A home the owner can pass through (landlock binds nothing; search is never lent to it).
      const home = tempDir();
      chmodSync(home, 0o711);
      server = await startServer({ home, env: { ...allowing(root), CODEXEC_SANDBOX_MODE: mode } });
      swapper = spawn('/usr/bin/python3', ['-c', SWAPPER, race, evil], {
        stdio: ['ignore', 'pipe', 'inherit'],
      });
      await new Promise((resolve) => swapper?.stdout?.once('data', resolve));
    });
    afterAll(async () => {
      swapper?.kill('SIGKILL');
      await server.close();
    });

    it('never binds what was put at the path instead of the directory checked', async () => {
      let ran = 0;
      for (let i = 0; i < 100; i++) {
        const call = await callTool<Run | Refusal>(server.client, 'execute_code', {
          language: 'bash',
          code: 'ls -a',
          working_dir: race,
        });
        if (call.isError) continue; // refused: the path was the symlink when it was opened
        ran++;
        expect((call.value as Run).stdout).not.toContain('ROOTMARKER');
      }
      expect(ran).toBeGreaterThan(0);
    });
  },
);

// A 1x1 PNG: what the image collector returns when the code leaves one.
const PNG = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==',
  'base64',
);

// Root-owned leftovers in a user's project (a root build, a sudo-made .env): the server reads and
// writes there as root, but never further than the owner, whom the code runs as, could.
describe.runIf(IS_ROOT)('file tools in a host directory do only what its owner may', () => {
  let server: TestServer;
  let session: string;
  const root = tempDir('codexec-allowed-');
  const user = ownedSub(root, 'project');
  beforeAll(async () => {
    writeFileSync(join(user, 'rootfile'), 'ROOTSECRET', { mode: 0o600 });
    mkdirSync(join(user, 'rsub'), { mode: 0o755 });
    writeFileSync(join(user, 'rsub', 's'), 'RSUBSECRET', { mode: 0o600 });
    writeFileSync(join(user, 'rootimg.png'), PNG, { mode: 0o600 });
    writeFileSync(join(user, 'mine.txt'), 'readable');
    chownSync(join(user, 'mine.txt'), OWNER.uid, OWNER.gid);
    server = await startServer({ env: allowing(root) });
    const started = await callTool<{ session_id: string }>(server.client, 'start_session', {
      language: 'bash',
      working_dir: user,
    });
    session = started.value.session_id;
  });
  afterAll(() => server.close());

  it('read_file, write_file and resources refuse what the owner could not', async () => {
    for (const path of ['rootfile', 'rsub/s']) {
      const read = await callTool<Refusal>(server.client, 'read_file', { session_id: session, path });
      expect({ path, code: read.value.code }).toEqual({ path, code: 'FORBIDDEN_PATH' });
      await expect(
        server.client.readResource({ uri: `codexec://session/${session}/${path}` }),
      ).rejects.toThrow(/may not read/);
    }
    const wrote = await callTool<Refusal>(server.client, 'write_file', {
      session_id: session,
      path: 'rsub/planted',
      content: 'x',
    });
    expect(wrote.value.code).toBe('FORBIDDEN_PATH');
    const mine = await callTool<{ content: string }>(server.client, 'read_file', {
      session_id: session,
      path: 'mine.txt',
    });
    expect(mine.value.content).toBe('readable');
  });

  it('a root-only picture the code moved is not returned as an image', async () => {
    const run = await callTool<Run & { images?: unknown[] }>(server.client, 'execute_code', {
      language: 'bash',
      code: 'mv rootimg.png moved.png && echo moved',
      working_dir: user,
    });
    expect(run.value.stdout).toBe('moved\n');
    expect(run.value.images ?? []).toEqual([]);
    // The control: a picture the owner made is returned.
    const own = await callTool<Run & { images?: unknown[] }>(server.client, 'execute_code', {
      language: 'bash',
      code: `echo ${PNG.toString('base64')} | base64 -d > own.png`,
      working_dir: user,
    });
    expect(own.value.images).toHaveLength(1);
  });
});

describe('tools/list and host directories', () => {
  it('offers working_dir only where CODEXEC_ALLOWED_PATHS lists roots, naming them', async () => {
    const root = tempDir('codexec-allowed-');
    for (const env of [{}, allowing(root)]) {
      const server = await startServer({ env });
      try {
        const { tools } = await server.client.listTools();
        for (const name of ['execute_code', 'start_session', 'run_script']) {
          const properties = (tools.find((tool) => tool.name === name)?.inputSchema.properties ??
            {}) as Record<string, { description?: string }>;
          if ('CODEXEC_ALLOWED_PATHS' in env) expect(properties.working_dir?.description).toContain(root);
          else expect(properties).not.toHaveProperty('working_dir');
        }
      } finally {
        await server.close();
      }
    }
  });
});
