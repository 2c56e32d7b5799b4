import {
  chownSync,
  existsSync,
  mkdirSync,
  realpathSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { allowing, OWNER, ownedDir } from '../helpers/host-dir.js';
import { IS_ROOT, SANDBOX_MODE } from '../helpers/mode.js';
import { processesWith, sleepMarker } from '../helpers/procs.js';
import { callTool, ERAS, startServer, type TestServer, tempDir, textFacts } from '../helpers/server.js';

interface Result {
  success: boolean;
  exit_code: number | null;
  stdout: string;
  stderr: string;
  execution_time: number;
  execution_id: string;
  duration_ms: number;
  timed_out: boolean;
  truncated: boolean;
  work_dir: string;
  working_dir: string;
  sandbox_mode: string;
  artifacts: string[];
  venv: string | null;
  code?: string;
  error?: string;
}

const CANARY = { ANTHROPIC_API_KEY: 'sk-ant-canary-cmd-4242', DB_PASSWORD: 'pw-canary-cmd-4242' };

describe.each(ERAS)('execute_command (%s era)', (era) => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startServer({ era });
  });
  afterAll(() => server.close());

  it('is advertised with MassGen input names and runs a command line with bash -c', async () => {
    const { tools } = await server.client.listTools();
    const tool = tools.find((t) => t.name === 'execute_command');
    expect(tool?.inputSchema.required).toEqual(['command']);
    expect(Object.keys(tool?.inputSchema.properties ?? {}).sort()).toEqual([
      'command',
      'timeout',
      'work_dir',
    ]);
    expect(tool?.outputSchema?.properties).toHaveProperty('execution_time');
    const { isError, value, text } = await callTool<Result>(server.client, 'execute_command', {
      command: 'basename "$0" | tr a-z A-Z && printf "%s\\n" one two | wc -l',
    });
    expect(isError).toBe(false);
    expect(value).toMatchObject({ success: true, exit_code: 0, stdout: 'BASH\n2\n', stderr: '' });
    expect(textFacts(text, value)).toMatchObject({ exit_code: 0, execution_id: value.execution_id });
    expect(text).toMatch(/\nBASH\n2\n$/);
  });
});

describe('execute_command', () => {
  let server: TestServer;
  let allowed: string;
  const run = (args: Record<string, unknown>) => callTool<Result>(server.client, 'execute_command', args);

  beforeAll(async () => {
    allowed = ownedDir('codexec-allowed-');
    server = await startServer({ env: { ...CANARY, ...allowing(allowed) } });
  });
  afterAll(async () => {
    await server.close();
    rmSync(allowed, { recursive: true, force: true });
  });

  it('returns MassGen fields plus ours, execution_time in seconds', async () => {
    const { value } = await run({ command: 'sleep 0.3; echo out; echo err >&2; exit 3' });
    expect(value).toMatchObject({
      success: false,
      exit_code: 3,
      stdout: 'out\n',
      stderr: 'err\n',
      timed_out: false,
      truncated: false,
      venv: null,
      work_dir: realpathSync(join(server.home, 'workspace')),
    });
    expect(value.execution_id).toMatch(/^exec_[0-9a-f]{12}$/);
    expect(value.sandbox_mode).toBe(SANDBOX_MODE);
    // seconds out: 0.3 s of sleep is >= 0.3, and the same time as duration_ms
    expect(value.execution_time).toBeGreaterThanOrEqual(0.3);
    expect(value.execution_time).toBeLessThan(30);
    expect(value.execution_time).toBeCloseTo(value.duration_ms / 1000, 3);
  });

  it('keeps the workspace between calls and lists what a command made', async () => {
    const first = await run({ command: 'mkdir -p proj && echo 41 > proj/n.txt' });
    expect(first.value).toMatchObject({ success: true, artifacts: ['proj/n.txt'] });
    const second = await run({ command: 'echo $(( $(cat n.txt) + 1 )) | tee m.txt', work_dir: 'proj' });
    expect(second.value).toMatchObject({ success: true, stdout: '42\n', artifacts: ['m.txt'] });
    expect(second.value.work_dir).toBe(join(first.value.work_dir, 'proj'));
    expect(existsSync(join(second.value.work_dir, 'm.txt'))).toBe(true);
  });

  it("takes and gives the other run tools' names too: working_dir, timeout_ms, duration_ms", async () => {
    await run({ command: 'mkdir -p named' });
    const named = await run({ command: 'pwd', working_dir: 'named', timeout_ms: 5000 });
    expect(named.value).toMatchObject({ success: true, stdout: `${named.value.work_dir}\n` });
    expect(named.value.working_dir).toBe(named.value.work_dir);
    expect(typeof named.value.duration_ms).toBe('number');
    const both = await run({ command: 'true', work_dir: 'named', working_dir: 'elsewhere' });
    expect(both.value).toMatchObject({ success: false, code: 'INVALID_INPUT' });
    const times = await run({ command: 'true', timeout: 5, timeout_ms: 5000 });
    expect(times.value).toMatchObject({ success: false, code: 'INVALID_INPUT' });
  });

  it('stops at timeout (seconds in), keeping the output so far', async () => {
    const { isError, value } = await run({ command: 'echo before; sleep 20; echo after', timeout: 1 });
    expect(isError).toBe(false);
    expect(value).toMatchObject({ success: false, timed_out: true, exit_code: null, stdout: 'before\n' });
    expect(value.execution_time).toBeGreaterThanOrEqual(1);
    expect(value.execution_time).toBeLessThan(15);
  });

  it('leaves no background process running after the call', async () => {
    // The shell that would touch the file and its sleep both carry the marker in their argv: once
    // neither is alive, the file can never appear.
    const marker = sleepMarker();
    const started = await run({
      command: `sh -c 'sleep ${marker}; touch bg-file' ${marker} > /dev/null 2>&1 & echo started`,
    });
    expect(started.value).toMatchObject({ success: true, stdout: 'started\n', timed_out: false });
    expect(started.value.execution_time).toBeLessThan(2);
    await expect.poll(() => processesWith(marker), { timeout: 10_000 }).toEqual([]);
    expect(existsSync(join(started.value.work_dir, 'bg-file'))).toBe(false);
  });

  it('has no network and none of the server secrets', async () => {
    const { value } = await run({
      command:
        'env; (exec 3<>/dev/tcp/1.1.1.1/80) 2>/dev/null && echo NET-OPEN || echo NET-CLOSED; cat /proc/1/environ 2>/dev/null | tr "\\0" "\\n"',
    });
    expect(value.stdout).toContain('NET-CLOSED');
    expect(value.stdout).not.toContain('NET-OPEN');
    for (const secret of Object.values(CANARY)) expect(value.stdout).not.toContain(secret);
    expect(value.stdout).not.toMatch(/ANTHROPIC_API_KEY|DB_PASSWORD/);
  });

  it('puts work_dir/.venv first on PATH with VIRTUAL_ENV, found on each call', async () => {
    await run({ command: 'mkdir -p venvproj' });
    const made = await run({ command: 'python3 -m venv --without-pip .venv', work_dir: 'venvproj' });
    expect(made.value).toMatchObject({ success: true, venv: null });
    // the venv's files are tooling, not artifacts
    expect(made.value.artifacts).toEqual([]);
    const { value } = await run({
      command: 'command -v python; echo "$VIRTUAL_ENV"; python -c "import sys; print(sys.prefix)"',
      work_dir: 'venvproj',
    });
    const venv = join(value.work_dir, '.venv');
    expect(value).toMatchObject({ success: true, venv });
    expect(value.stdout).toBe(`${venv}/bin/python\n${venv}\n${venv}\n`);
    const elsewhere = await run({ command: 'echo "[$VIRTUAL_ENV]"' });
    expect(elsewhere.value).toMatchObject({ stdout: '[]\n', venv: null });
  });

  it('takes no .venv that is a link: the server, looking as root, says nothing of the host', async () => {
    // The attack: `.venv -> /root/.pyenv` set venv (it has a bin/), `-> /root/nosuch` did not.
    for (const made of ['ln -sfn /usr .venv', 'rm .venv && mkdir .venv && ln -s /usr/bin .venv/bin']) {
      await run({ command: `mkdir -p linked && cd linked && ${made}` });
      const { value } = await run({ command: 'echo "[$VIRTUAL_ENV]"', work_dir: 'linked' });
      expect(value, made).toMatchObject({ stdout: '[]\n', venv: null });
    }
  });

  it.each([
    // uv venv: pyvenv.cfg carries a uv key; poetry (in-project) uses virtualenv's layout
    [
      'uv',
      'home = /usr/bin\nimplementation = CPython\nuv = 0.4.30\nversion_info = 3.11.2\ninclude-system-site-packages = false\n',
    ],
    [
      'poetry',
      'home = /usr/bin\nimplementation = CPython\nversion_info = 3.11.2\nvirtualenv = 20.26.6\ninclude-system-site-packages = false\nbase-prefix = /usr\n',
    ],
  ])('detects a %s-made .venv layout', async (tool, cfg) => {
    const dir = join(allowed, tool);
    mkdirSync(join(dir, '.venv/bin'), { recursive: true });
    // The command runs as the directory's owner; the venv it only reads.
    if (IS_ROOT) chownSync(dir, OWNER.uid, OWNER.gid);
    writeFileSync(join(dir, '.venv/pyvenv.cfg'), cfg);
    symlinkSync('/usr/bin/python3', join(dir, '.venv/bin/python'));
    const { value } = await run({ command: 'python -c "import sys; print(sys.prefix)"', work_dir: dir });
    expect(value).toMatchObject({
      success: true,
      venv: join(dir, '.venv'),
      stdout: `${join(dir, '.venv')}\n`,
    });
  });

  it('leaves generated files out of artifact lists', async () => {
    await run({ command: 'mkdir -p gen' });
    const { value } = await run({
      work_dir: 'gen',
      command:
        'mkdir -p __pycache__ .pytest_cache/v .mypy_cache node_modules/x pkg.egg-info src/__pycache__ && ' +
        'touch __pycache__/m.cpython-311.pyc src/__pycache__/a.pyc .pytest_cache/v/x node_modules/x/i.js ' +
        'pkg.egg-info/PKG-INFO .DS_Store .notes.swp old.txt~ stray.pyc src/app.py report.log && ' +
        'python3 -c "import sys; sys.path.insert(0, \\"src\\"); import app"',
    });
    expect(value.success).toBe(true);
    expect(value.artifacts.sort()).toEqual(['report.log', 'src/app.py']);
  });

  it('runs in an absolute work_dir inside CODEXEC_ALLOWED_PATHS and writes there', async () => {
    const { value } = await run({ command: 'echo hi > made.txt; pwd', work_dir: allowed });
    expect(value).toMatchObject({
      success: true,
      stdout: `${realpathSync(allowed)}\n`,
      artifacts: ['made.txt'],
    });
    expect(statSync(join(allowed, 'made.txt')).uid).toBe(OWNER.uid);
  });

  it.each([
    ['an absolute path outside the allowed ones', () => tempDir('codexec-out-'), 'FORBIDDEN_PATH'],
    ['a relative path climbing out', () => '../logs', 'FORBIDDEN_PATH'],
    ['a symlink in the workspace leading out', () => 'escape', 'FORBIDDEN_PATH'],
    // Named by its absolute path, a link inside is refused as by its relative one (it followed it).
    [
      'a symlink in the workspace, by its absolute path',
      () => join(server.home, 'workspace/inner'),
      'FORBIDDEN_PATH',
    ],
    ['a forbidden path', () => '/etc', 'FORBIDDEN_PATH'],
    ['a missing directory', () => 'no/such/dir', 'INVALID_INPUT'],
    // Opened one name at a time: a file where a directory is named stops the walk.
    ['a file', () => 'proj/n.txt', 'FORBIDDEN_PATH'],
  ])('refuses %s as work_dir', async (_what, workDir, code) => {
    if (!existsSync(join(server.home, 'workspace/escape')))
      symlinkSync(tempDir('codexec-link-'), join(server.home, 'workspace/escape'));
    if (!existsSync(join(server.home, 'workspace/inner')))
      symlinkSync(join(server.home, 'workspace/proj'), join(server.home, 'workspace/inner'));
    const { isError, value } = await run({ command: 'true', work_dir: workDir() });
    expect(isError).toBe(true);
    expect(value).toMatchObject({ success: false, code });
    expect(value.error).toMatch(/work_dir/);
  });

  it.each([
    [{}, /command/],
    [{ command: '' }, /command/],
    [{ command: 'true', timeout: 0 }, /timeout/],
    [{ command: 'true', timeout: '5' }, /timeout/],
    [{ command: 'true', work_dir: 'a\0b' }, /NUL/],
  ])('refuses bad input %j with INVALID_INPUT', async (args, message) => {
    const { isError, value } = await run(args);
    expect(isError).toBe(true);
    expect(value).toMatchObject({ success: false, code: 'INVALID_INPUT' });
    expect(value.error).toMatch(message);
  });

  it('is logged and found by search_execution_logs by its text', async () => {
    const word = `cmdword${Date.now()}`;
    const { value } = await run({ command: `echo ${word}-out` });
    const found = await callTool<{ results: Array<{ execution_id: string; language: string }> }>(
      server.client,
      'search_execution_logs',
      { query: word },
    );
    expect(found.value.results.map((r) => r.execution_id)).toContain(value.execution_id);
    const entry = await callTool<{ code: string; language: string; working_dir: string }>(
      server.client,
      'get_execution_log',
      { execution_id: value.execution_id },
    );
    expect(entry.value).toMatchObject({
      code: `echo ${word}-out`,
      language: 'bash',
      working_dir: value.work_dir,
    });
  });
});
