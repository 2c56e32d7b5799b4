import { readFileSync, rmSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { allowing, ownedDir } from '../helpers/host-dir.js';
import { SANDBOX_MODE } from '../helpers/mode.js';
import { processesWith, sleepMarker } from '../helpers/procs.js';
import { callTool, startServer, type TestServer } from '../helpers/server.js';

interface Result {
  success: boolean;
  execution_id: string;
  stdout: string;
  stderr: string;
  exit_code: number | null;
  timed_out: boolean;
  truncated: boolean;
  duration_ms: number;
  sandbox_mode: string;
}

function peakRssMb(pid: number): number {
  const match = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return Number(match?.[1]) / 1024;
}

describe('execute_code limits', () => {
  let server: TestServer;
  const run = (args: Record<string, unknown>) => callTool<Result>(server.client, 'execute_code', args);
  // A host directory for a cold run (the one root the server allows).
  const dir = ownedDir('codexec-cpu-');

  beforeAll(async () => {
    server = await startServer({ env: { CODEXEC_KILL_GRACE_MS: '500', ...allowing(dir) } });
  });
  afterAll(async () => {
    await server.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('times out, keeps partial output and reports exit_code null', async () => {
    const { value } = await run({
      language: 'python',
      code: 'import time\nprint("Processing row 1...")\ntime.sleep(30)',
      timeout_ms: 700,
    });
    expect(value).toMatchObject({ success: false, timed_out: true, exit_code: null });
    expect(value.stdout).toBe('Processing row 1...\n');
    expect(value.stderr).toContain('timed out after 700 ms');
    expect(value.duration_ms).toBeLessThan(5000);
  });

  it('SIGKILLs a process that ignores SIGTERM after the grace period', async () => {
    const started = Date.now();
    const { value } = await run({
      language: 'python',
      code: 'import signal, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\nprint("ignoring", flush=True)\ntime.sleep(60)',
      timeout_ms: 500,
    });
    expect(value).toMatchObject({ timed_out: true, exit_code: null, stdout: 'ignoring\n' });
    expect(Date.now() - started).toBeLessThan(4000);
  });

  it('gives multi-threaded code its whole time: the CPU rlimit covers timeout and grace on every CPU', async () => {
    // A run whose threads keep every CPU busy must reach its timeout, not an RLIMIT_CPU of the
    // timeout alone (which killed two busy threads at half of it, with no reason given).
    // A custom working_dir runs cold; the other may be warm (whose limit is the longest timeout's).
    const code =
      'print([l.split()[3] for l in open("/proc/self/limits") if l.startswith("Max cpu time")][0])';
    for (const args of [{ working_dir: dir }, {}]) {
      const { value } = await run({ language: 'python', code, timeout_ms: 4000, ...args });
      expect(value).toMatchObject({ success: true, sandbox_mode: SANDBOX_MODE });
      expect(Number(value.stdout)).toBeGreaterThanOrEqual((4 + 0.5) * availableParallelism());
    }
  });

  it('leaves no background grandchild alive after a normal exit', async () => {
    const marker = sleepMarker();
    const { value } = await run({
      language: 'bash',
      code: `(trap "" TERM; sleep ${marker}) &\nsleep ${marker} &\nnohup sleep ${marker} >/dev/null 2>&1 &\nsleep 0.2; echo started`,
    });
    expect(value).toMatchObject({ success: true, stdout: 'started\n' });
    await expect.poll(() => processesWith(marker), { timeout: 3000 }).toEqual([]);
  });

  it('kills grandchildren that ignore SIGTERM when a run times out', async () => {
    const marker = sleepMarker();
    const { value } = await run({
      language: 'bash',
      code: `(trap "" TERM; exec sleep ${marker}) &\ntrap "" TERM\nsleep 0.2; echo started\nsleep 300`,
      timeout_ms: 700,
    });
    expect(value).toMatchObject({ timed_out: true, stdout: 'started\n' });
    await expect.poll(() => processesWith(marker), { timeout: 3000 }).toEqual([]);
  });

  it('truncates with the default head and tail', async () => {
    const { value } = await run({
      language: 'python',
      code: 'print("".join(str(i % 10) for i in range(25000)), end="")',
    });
    expect(value.truncated).toBe(true);
    const [head, tail] = value.stdout.split(
      /\n\[\.\.\. truncated 17000 characters \.\.\.\]\n\[the rest: [^\n]*\]\n/,
    );
    expect(head).toHaveLength(4000);
    expect(tail).toHaveLength(4000);
    expect(head?.startsWith('0123456789')).toBe(true);
    expect(tail?.endsWith('56789')).toBe(true);
  });

  it('streams a 300 MB output flood with bounded server memory', async () => {
    const { value } = await run({
      language: 'python',
      code: 'import sys\nblock = "y" * 1_000_000\nfor _ in range(300):\n    sys.stdout.write(block)\nprint("END")',
      timeout_ms: 120_000,
    });
    expect(value.success).toBe(true);
    expect(value.truncated).toBe(true);
    expect(value.stdout.endsWith('yyyEND\n')).toBe(true);
    expect(value.stdout).toContain('[... truncated 299992004 characters ...]');
    expect(peakRssMb(server.pid)).toBeLessThan(200);
  });

  it('runs 8 executions concurrently, each with its own result', async () => {
    const started = Date.now();
    const results = await Promise.all(
      Array.from({ length: 8 }, (_, i) =>
        run({ language: 'python', code: `import time\ntime.sleep(0.5)\nprint(${i} * 10)` }),
      ),
    );
    expect(results.map((r) => r.value.stdout)).toEqual(Array.from({ length: 8 }, (_, i) => `${i * 10}\n`));
    expect(Date.now() - started).toBeLessThan(4 * 500 + 3000); // concurrent, not 8 x 0.5 s in series
  });
});

describe('execute_code truncation settings', () => {
  it('honours CODEXEC_MAX_OUTPUT_CHARS, _HEAD and _TAIL', async () => {
    const server = await startServer({
      env: { CODEXEC_MAX_OUTPUT_CHARS: '100', CODEXEC_TRUNCATION_HEAD: '10', CODEXEC_TRUNCATION_TAIL: '5' },
    });
    try {
      const small = await callTool<Result>(server.client, 'execute_code', {
        language: 'bash',
        code: 'printf "%0100d" 0',
      });
      expect(small.value).toMatchObject({ truncated: false, stdout: '0'.repeat(100) });
      const big = await callTool<Result>(server.client, 'execute_code', {
        language: 'bash',
        code: 'printf "abcdefghij%0200dvwxyz" 0 >&2',
      });
      expect(big.value.truncated).toBe(true);
      const page = JSON.stringify({ execution_id: big.value.execution_id, path: 'stderr', offset: 10 });
      expect(big.value.stderr).toBe(
        `abcdefghij\n[... truncated 200 characters ...]\n[the rest: read_file ${page}; offset and length count bytes]\nvwxyz`,
      );
    } finally {
      await server.close();
    }
  });
});
