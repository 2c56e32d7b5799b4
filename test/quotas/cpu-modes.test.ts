// cpu_seconds_per_day where no cgroup counts a run (subprocess mode; the configured confined mode
// run by an ordinary user): the server samples the run's process tree. Real server over stdio.
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { IS_ROOT, SANDBOX_MODE } from '../helpers/mode.js';
import { callTool, startServer, type TestServer, tempDir } from '../helpers/server.js';
import { type QuotaRefusal, quotasFile, removeQuotaFiles } from './helpers.js';

afterAll(removeQuotaFiles);

/** About one CPU second of Python, in the process the server started (or a child of it). */
const BURN = 'import time\nt = time.process_time()\nwhile time.process_time() - t < 1: pass\nprint("burnt")';
const CHILD_BURN = `import subprocess, sys\nsubprocess.run([sys.executable, "-c", ${JSON.stringify(BURN)}])`;

// As root the confined modes have cgroups (stdio.test.ts); as an ordinary user they have none.
const MODES = ['subprocess', ...(IS_ROOT ? [] : [SANDBOX_MODE])];

describe.each(MODES)('cpu_seconds_per_day in %s mode without cgroups', (mode) => {
  let server: TestServer | undefined;
  let home: string | undefined;
  afterEach(async () => {
    await server?.close();
    server = undefined;
    if (home) rmSync(home, { recursive: true, force: true });
  });

  async function start(): Promise<TestServer> {
    home = tempDir();
    const quotas = quotasFile({ local: { cpu_seconds_per_day: 0.5 } });
    server = await startServer({ env: { CODEXEC_QUOTAS: quotas, CODEXEC_SANDBOX_MODE: mode }, home });
    return server;
  }

  /** The µs charged to the local principal today. */
  const charged = () =>
    JSON.parse(readFileSync(join(home as string, 'quota-usage.json'), 'utf8')).cpu_usec.local as number;

  const refusedNext = async (s: TestServer) => {
    const next = await callTool<QuotaRefusal>(s.client, 'execute_code', {
      language: 'bash',
      code: 'echo no',
    });
    expect(next.value).toMatchObject({ code: 'QUOTA_EXCEEDED', limit: 'cpu_seconds_per_day' });
  };

  it.each([
    ['the program', BURN],
    ['a child of the program', CHILD_BURN],
  ])('a run burning a CPU second in %s is charged it; the next run is refused', async (_, code) => {
    const s = await start();
    const burn = await callTool<{ stdout: string; success: boolean }>(s.client, 'execute_code', {
      language: 'python',
      code,
    });
    expect(burn.value).toMatchObject({ success: true, stdout: 'burnt\n' });
    // At most one sample (100 ms) lost per process; the interpreter's start-up adds a little.
    expect(charged()).toBeGreaterThan(800_000);
    expect(charged()).toBeLessThan(5_000_000);
    await refusedNext(s);
  });

  it('a session send burning a CPU second is charged it', async () => {
    const s = await start();
    const session = await callTool<{ session_id: string }>(s.client, 'start_session', { language: 'python' });
    const sent = await callTool<{ stdout: string }>(s.client, 'send_to_session', {
      session_id: session.value.session_id,
      code: BURN,
    });
    expect(sent.value.stdout).toBe('burnt\n');
    expect(charged()).toBeGreaterThan(800_000);
    await refusedNext(s);
  });
});
