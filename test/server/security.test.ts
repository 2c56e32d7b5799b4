import { chownSync, mkdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { allowing, OWNER, ownedDir } from '../helpers/host-dir.js';
import { callTool, startServer, type TestServer } from '../helpers/server.js';

interface Result {
  success: boolean;
  stdout: string;
  artifacts: string[];
  working_dir: string;
}

const CANARIES = {
  ANTHROPIC_API_KEY: 'sk-ant-canary-4242',
  GROQ_API_KEY: 'gsk-canary-4242',
  AWS_SECRET_ACCESS_KEY: 'aws-canary-4242',
  TELEGRAM_SESSION: 'tg-canary-4242',
};

describe('execute_code environment and working_dir policy', () => {
  let server: TestServer;
  let outside: string;
  const run = (args: Record<string, unknown>) => callTool<Result>(server.client, 'execute_code', args);

  /** A file the test puts in the owner's directory, the owner's. */
  const put = (name: string, text: string) => {
    writeFileSync(join(outside, name), text);
    chownSync(join(outside, name), OWNER.uid, OWNER.gid);
  };

  beforeAll(async () => {
    // Every host directory allowed: the denylist and codexec's own directories still hold beneath /.
    server = await startServer({ env: { ...CANARIES, ...allowing('/') } });
    outside = ownedDir('codexec-wd-');
  });
  afterAll(async () => {
    await server.close();
    rmSync(outside, { recursive: true, force: true });
  });

  it.each(['python', 'node', 'bash'])('never passes server env secrets to %s code', async (language) => {
    const code = {
      python: 'import os\nfor k, v in sorted(os.environ.items()): print(f"{k}={v}")',
      node: 'for (const [k, v] of Object.entries(process.env)) console.log(`${k}=${v}`)',
      bash: 'env',
    }[language];
    const { value } = await run({ language, code });
    expect(value.success).toBe(true);
    expect(value.stdout).not.toContain('canary-4242');
    const names = value.stdout
      .trim()
      .split('\n')
      .map((line) => line.split('=')[0]);
    const allowed = ['PATH', 'HOME', 'LANG', 'TERM', 'TMPDIR', 'USER'];
    const runtimeOwn = [
      'PYTHONUNBUFFERED',
      'PYTHONIOENCODING',
      'PYTHONDONTWRITEBYTECODE',
      // Python's figure capture (src/engine/images.ts figureEnv): the backend's name, the folder
      // that holds it (on PYTHONPATH), and paths in the run's own workspace for the figures,
      // matplotlib's config and fontconfig's cache. None holds a secret: all are the server's
      // constants or the run's own workspace, where its script runs from (and, confined, its HOME).
      'MPLBACKEND',
      'PYTHONPATH',
      'CODEXEC_FIGURES_DIR',
      'MPLCONFIGDIR',
      'XDG_CACHE_HOME',
      'PWD',
      'SHLVL',
      '_',
    ];
    expect(names.filter((n) => !allowed.includes(n ?? '') && !runtimeOwn.includes(n ?? ''))).toEqual([]);
  });

  it('gives code a HOME and TMPDIR that exist and are writable', async () => {
    const { value } = await run({
      language: 'python',
      code: [
        'import os, tempfile',
        'home = os.path.expanduser("~")',
        'open(os.path.join(home, ".probe"), "w").write("x")',
        'with tempfile.NamedTemporaryFile() as f: f.write(b"x")',
        'print(os.path.isdir(home), os.access(home, os.W_OK))',
      ].join('\n'),
    });
    expect(value).toMatchObject({ success: true, stdout: 'True True\n' });
  });

  it('runs in a custom working_dir and reports what it created and modified there', async () => {
    put('data.csv', 'a\n1\n');
    const { value } = await run({
      language: 'python',
      code: 'rows = open("data.csv").read().split()\nopen("data.csv","a").write("2\\n")\nopen("summary.txt","w").write(str(len(rows)))',
      working_dir: outside,
    });
    expect(value.success).toBe(true);
    expect(value.working_dir).toBe(outside);
    expect(value.artifacts.sort()).toEqual(['data.csv', 'summary.txt']);
    expect(readFileSync(join(outside, 'summary.txt'), 'utf8')).toBe('2');
  });

  it('makes the custom working_dir importable for python', async () => {
    put('helper_mod.py', 'VALUE = 42\n');
    const { value } = await run({
      language: 'python',
      code: 'import helper_mod\nprint(helper_mod.VALUE)',
      working_dir: outside,
    });
    expect(value.stdout).toBe('42\n');
  });

  it.each(['/etc', '~/.ssh', '/var/tmp', '~'])('refuses working_dir %s with FORBIDDEN_PATH', async (dir) => {
    const { isError, value } = await callTool<{ code: string; error: string }>(
      server.client,
      'execute_code',
      {
        language: 'bash',
        code: 'echo should-not-run > ran.txt',
        working_dir: dir,
      },
    );
    expect(isError).toBe(true);
    expect(value.code).toBe('FORBIDDEN_PATH');
    expect(value.error).toContain(dir);
  });

  it('refuses a symlink that points into a forbidden directory', async () => {
    const link = join(outside, 'innocent');
    symlinkSync('/etc', link);
    const { isError, value } = await callTool<{ code: string }>(server.client, 'execute_code', {
      language: 'bash',
      code: 'touch pwned',
      working_dir: link,
    });
    expect(isError).toBe(true);
    expect(value.code).toBe('FORBIDDEN_PATH');
  });

  it("refuses codexec home, its sandbox dir, a session's workspace and any dir in them", async () => {
    const session = await callTool<{ session_id: string; working_dir: string }>(
      server.client,
      'start_session',
      {
        language: 'bash',
      },
    );
    const inside = join(server.home, 'sandbox', 'project');
    mkdirSync(inside, { recursive: true });
    const workspace = join(server.home, 'workspace');
    mkdirSync(workspace, { recursive: true });
    for (const dir of [
      server.home,
      join(server.home, 'sandbox'),
      session.value.working_dir,
      inside,
      workspace,
      join(server.home, 'envs'),
    ]) {
      mkdirSync(dir, { recursive: true }); // a missing one would be INVALID_INPUT, not the rule
      for (const tool of ['execute_code', 'start_session'] as const) {
        const refused = await callTool<{ code: string }>(server.client, tool, {
          language: 'bash',
          ...(tool === 'execute_code' && { code: 'ls' }),
          working_dir: dir,
        });
        expect({ dir, tool, code: refused.value.code }).toEqual({ dir, tool, code: 'FORBIDDEN_PATH' });
      }
    }
    await callTool(server.client, 'close_session', { session_id: session.value.session_id });
  });

  it('refuses a missing working_dir with INVALID_INPUT', async () => {
    const { value } = await callTool<{ code: string }>(server.client, 'execute_code', {
      language: 'bash',
      code: 'ls',
      working_dir: join(outside, 'does-not-exist'),
    });
    expect(value.code).toBe('INVALID_INPUT');
  });
});
