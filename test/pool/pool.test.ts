import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { allowing, ownedDir } from '../helpers/host-dir.js';
import { processesUnder } from '../helpers/procs.js';
import { callTool, startServer, type TestServer } from '../helpers/server.js';

interface Result {
  success: boolean;
  stdout: string;
  stderr: string;
  warm: boolean;
  execution_id: string;
  working_dir: string;
  sandbox_mode: string;
}

async function warmRun(server: TestServer, args: Record<string, unknown>): Promise<Result> {
  // The first request of a language starts the pool; poll until a run is served warm.
  for (let i = 0; i < 50; i++) {
    const { value } = await callTool<Result>(server.client, 'execute_code', args);
    if (value.warm) return value;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error('no run was served from the warm pool');
}

describe('warm pool', () => {
  let server: TestServer;
  // A caller's working_dir, the one root the server allows.
  const dir = ownedDir('codexec-pool-wd-');
  beforeAll(async () => {
    server = await startServer({ env: { CODEXEC_POOL_SIZE: '2', ...allowing(dir) } });
  });
  afterAll(async () => {
    await server.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it.each([
    ['python', 'import sys\nprint("py", sys.argv[1:] == [], __name__)', 'py True __main__\n'],
    ['node', 'console.log("js", typeof require, process.argv.length)', 'js function 2\n'],
    ['typescript', 'const n: number = 40;\nconsole.log(n + 2)', '42\n'],
    ['bash', 'echo "sh $0" | sed "s|/.*/||"', 'sh _codexec_script.sh\n'],
  ])('serves %s runs warm with the same result as a cold run', async (language, code, stdout) => {
    const value = await warmRun(server, { language, code });
    expect(value).toMatchObject({ success: true, stdout, stderr: '', warm: true });
  });

  it('carries nothing from one warm run to the next: globals, modules, env, files, /tmp', async () => {
    const first = await warmRun(server, {
      language: 'python',
      code: [
        'import os, sys, json, tempfile',
        'LEAKED = 1',
        'os.environ["LEAKED_ENV"] = "1"',
        'open("leaked.txt", "w").write("x")',
        'open("/tmp/leaked-tmp", "w").write("x")',
        'sys.modules["leaked_module"] = sys',
        'print(os.getcwd())',
      ].join('\n'),
    });
    const second = await warmRun(server, {
      language: 'python',
      code: [
        'import os, sys',
        'print("LEAKED" in globals(), "LEAKED_ENV" in os.environ, "leaked_module" in sys.modules, "json" in sys.modules)',
        'print(os.path.exists("leaked.txt"), os.path.exists("/tmp/leaked-tmp"), sorted(os.listdir(".")))',
        'print(os.getcwd())',
      ].join('\n'),
    });
    expect(second.execution_id).not.toBe(first.execution_id);
    const [flags, files, cwd] = second.stdout.trim().split('\n');
    expect(flags).toBe('False False False False');
    // /tmp is private per sandbox in namespace mode; the subprocess mode shares the host's /tmp.
    const listing = "['_codexec_script.py']";
    expect(files).toBe(
      second.sandbox_mode === 'namespace' ? `False False ${listing}` : `False True ${listing}`,
    );
    expect(cwd).not.toBe(first.stdout.trim());
    expect(second.working_dir).not.toBe(first.working_dir);
  });

  it('keeps node module state and globals apart between warm runs', async () => {
    await warmRun(server, {
      language: 'node',
      code: 'globalThis.leaked = 1; process.env.LEAKED = "1"; console.log("set")',
    });
    const second = await warmRun(server, {
      language: 'node',
      code: 'console.log(typeof globalThis.leaked, process.env.LEAKED ?? "none")',
    });
    expect(second.stdout).toBe('undefined none\n');
  });

  it('writes its end mark to the real output, not to a file the program put on fd 1', async () => {
    const value = await warmRun(server, {
      language: 'python',
      code: 'import os\nf = open("out.txt", "w")\nos.dup2(f.fileno(), 1)\nprint("to the file")',
    });
    expect(value).toMatchObject({ success: true, stdout: '', stderr: '' });
    expect(readFileSync(join(value.working_dir, 'out.txt'), 'utf8')).toBe('to the file\n');
  });

  it('runs with a custom working_dir or a syntax error stay cold', async () => {
    await warmRun(server, { language: 'bash', code: 'true' }); // the pool is up: a cold run is its choice
    const custom = await callTool<Result>(server.client, 'execute_code', {
      language: 'bash',
      code: 'pwd',
      working_dir: dir,
    });
    expect(custom.value).toMatchObject({ success: true, stdout: `${dir}\n`, warm: false, working_dir: dir });
    const { value } = await callTool<Result>(server.client, 'execute_code', {
      language: 'typescript',
      code: 'const = ;',
    });
    expect(value).toMatchObject({ success: false, warm: false });
  });
});

describe('warm pool lifecycle', () => {
  it('is disabled by CODEXEC_POOL_SIZE=0', async () => {
    const server = await startServer({ env: { CODEXEC_POOL_SIZE: '0' } });
    try {
      for (let i = 0; i < 3; i++) {
        const { value } = await callTool<Result>(server.client, 'execute_code', {
          language: 'bash',
          code: 'true',
        });
        expect(value.warm).toBe(false);
      }
      // A run's sandbox is stopped when it reports its end, and killed once the result is out.
      await expect.poll(() => processesUnder(server.home), { timeout: 2000 }).toEqual([]);
    } finally {
      await server.close();
    }
  });

  it('starts nothing before the first request, and kills every warm process when the server exits', async () => {
    const server = await startServer({ env: { CODEXEC_POOL_SIZE: '2' } });
    const home = server.home;
    // Nothing to wait for: the pause is the time a wrong start is given to show.
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(processesUnder(home)).toEqual([]);
    await warmRun(server, { language: 'python', code: 'print(1)' });
    await warmRun(server, { language: 'node', code: 'console.log(1)' });
    await expect.poll(() => processesUnder(home).length, { timeout: 5000 }).toBeGreaterThan(0);
    await server.close();
    await expect.poll(() => processesUnder(home), { timeout: 5000 }).toEqual([]);
  });

  it('empties the pool when idle', async () => {
    const server = await startServer({ env: { CODEXEC_POOL_SIZE: '1', CODEXEC_POOL_IDLE_MS: '1000' } });
    try {
      await warmRun(server, { language: 'bash', code: 'true' });
      await expect.poll(() => processesUnder(server.home), { timeout: 5000, interval: 200 }).toEqual([]);
    } finally {
      await server.close();
    }
  });
});

describe('warm pool memory budget', () => {
  it('starts no warm interpreter that would not fit CODEXEC_POOL_MEMORY_MB', async () => {
    const server = await startServer({ env: { CODEXEC_POOL_SIZE: '4', CODEXEC_POOL_MEMORY_MB: '1' } });
    try {
      for (let i = 0; i < 4; i++) {
        const { value } = await callTool<Result>(server.client, 'execute_code', {
          language: 'python',
          code: 'print(1)',
        });
        // Warm only if forked on demand from the zygote (root, namespace mode): never from the pool.
        expect(value).toMatchObject({ success: true });
        await new Promise((resolve) => setTimeout(resolve, 200)); // the time a wrong start is given to show
        expect(processesUnder(server.home)).toEqual([]);
      }
    } finally {
      await server.close();
    }
  });

  it('keeps only as many as fit, measured per sandbox', async () => {
    // A waiting python's sandbox is charged ~4-5 MB (~3.5 when forked from the zygote, whose pages
    // it shares): room for two or three, though the pool size asks for six.
    const server = await startServer({ env: { CODEXEC_POOL_SIZE: '6', CODEXEC_POOL_MEMORY_MB: '12' } });
    try {
      await warmRun(server, { language: 'python', code: 'print(1)' });
      // A driver is an interpreter started on warm_python.py, or forked from the zygote.
      const cmdline = (pid: number) => {
        try {
          return readFileSync(`/proc/${pid}/cmdline`, 'utf8');
        } catch {
          return ''; // gone meanwhile
        }
      };
      const interpreters = () =>
        processesUnder(server.home).filter((pid) => {
          const line = cmdline(pid);
          // A started sandbox shows the driver twice (bwrap's argv names it, then the interpreter).
          return (
            line.split('\0').some((arg) => arg.endsWith('warm_python.py') || arg.endsWith('zygote.py')) &&
            !line.includes('bwrap')
          );
        });
      await expect.poll(() => interpreters().length, { timeout: 15_000 }).toBeGreaterThan(0);
      // The pool fills in the background and says nothing when it stops: this pause is the time it
      // is given to start more than fit.
      await new Promise((resolve) => setTimeout(resolve, 1500));
      const started = interpreters();
      expect(started.length).toBeGreaterThan(0);
      expect(started.length).toBeLessThanOrEqual(3);
    } finally {
      await server.close();
    }
  });
});
