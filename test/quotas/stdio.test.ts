// CODEXEC_QUOTAS over stdio (the local principal), through the real server: concurrent runs,
// sessions, runs per minute, CPU seconds per UTC day (kept across a restart), and a bad file.
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { runsRunning } from '../helpers/health.js';
import { IS_ROOT } from '../helpers/mode.js';
import { baseEnv, CLI, callTool, startServer, type TestServer, tempDir } from '../helpers/server.js';
import { type QuotaRefusal, quotasFile, removeQuotaFiles, roomInMinute } from './helpers.js';

afterAll(removeQuotaFiles);

/** The audit trail's entries (logs/audit-<day>.jsonl). */
function auditEntries(home: string): Array<Record<string, unknown>> {
  const dir = join(home, 'logs');
  return readdirSync(dir)
    .filter((name) => /^audit-\d{4}-\d{2}-\d{2}\.jsonl$/.test(name))
    .flatMap((name) => readFileSync(join(dir, name), 'utf8').trimEnd().split('\n'))
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

const bash = (server: TestServer, code: string) =>
  callTool<QuotaRefusal & { stdout?: string }>(server.client, 'execute_code', { language: 'bash', code });

describe('CODEXEC_QUOTAS over stdio', () => {
  let server: TestServer | undefined;
  afterEach(async () => {
    await server?.close();
    server = undefined;
  });

  it('max_concurrent_runs: a second run while one runs is refused, without retry_after_ms', async () => {
    // Named `local`: the stdio principal's own entry (the `*` one would allow 5).
    const file = quotasFile({ '*': { max_concurrent_runs: 5 }, local: { max_concurrent_runs: 1 } });
    server = await startServer({ env: { CODEXEC_QUOTAS: file } });
    const first = bash(server, 'sleep 1.5; echo slow');
    expect(await runsRunning(server.client)).toBe(true);
    const second = await bash(server, 'echo second');
    expect(second.isError).toBe(true);
    expect(second.value).toMatchObject({
      success: false,
      code: 'QUOTA_EXCEEDED',
      limit: 'max_concurrent_runs',
      setting: 'CODEXEC_QUOTAS',
    });
    expect(second.value.error).toContain('max_concurrent_runs=1');
    expect(second.value.retry_after_ms).toBeUndefined();
    // The audit records the refusal as such, with the limit as its rule.
    const refused = auditEntries(server.home).filter((entry) => entry.input_code === 'echo second');
    expect(refused).toMatchObject([
      { approved: false, approved_by: null, rule: 'quota:max_concurrent_runs' },
    ]);
    expect((await first).value.stdout).toBe('slow\n');
    // Its slot is free again once the first ended.
    expect((await bash(server, 'echo again')).value.stdout).toBe('again\n');
  });

  it('max_sessions: one open session of the local principal, the next refused until it closes', async () => {
    server = await startServer({ env: { CODEXEC_QUOTAS: quotasFile({ '*': { max_sessions: 1 } }) } });
    const start = () =>
      callTool<QuotaRefusal & { session_id: string }>(server?.client as never, 'start_session', {
        language: 'bash',
      });
    const first = await start();
    expect(first.isError).toBe(false);
    const over = await start();
    expect(over.value).toMatchObject({ code: 'QUOTA_EXCEEDED', limit: 'max_sessions' });
    expect(over.value.error).toContain('max_sessions=1');
    await callTool(server.client, 'close_session', { session_id: first.value.session_id });
    expect((await start()).isError).toBe(false);
  });

  it('runs_per_minute: the third run of a minute is refused until the next UTC minute', async () => {
    server = await startServer({ env: { CODEXEC_QUOTAS: quotasFile({ local: { runs_per_minute: 2 } }) } });
    await roomInMinute(15_000);
    expect((await bash(server, 'echo 1')).isError).toBe(false);
    expect((await bash(server, 'echo 2')).isError).toBe(false);
    const third = await bash(server, 'echo 3');
    const untilNextMinute = 60_000 - (Date.now() % 60_000);
    expect(third.value).toMatchObject({ code: 'QUOTA_EXCEEDED', limit: 'runs_per_minute' });
    // When the window slot frees: the next minute's start, give or take the call's round trip.
    // (The minute's rollover, and that a refused call is not counted, are quotas.test.ts's, on a
    // clock of its own: here it would be a wait of up to a minute.)
    expect(Math.abs((third.value.retry_after_ms ?? -1) - untilNextMinute)).toBeLessThan(2000);
  });

  it.skipIf(!IS_ROOT)(
    'cpu_seconds_per_day: a CPU-burning run finishes, the next is refused, and still after a restart',
    async () => {
      const home = tempDir();
      try {
        const env = { CODEXEC_QUOTAS: quotasFile({ local: { cpu_seconds_per_day: 0.5 } }) };
        server = await startServer({ env, home });
        // About one CPU second: over the budget, yet never cut short (it started within it).
        const burn = await callTool<{ stdout: string; success: boolean }>(server.client, 'execute_code', {
          language: 'python',
          code: 'import time\nt = time.process_time()\nwhile time.process_time() - t < 1: pass\nprint("burnt")',
        });
        expect(burn.value).toMatchObject({ success: true, stdout: 'burnt\n' });
        const usage = JSON.parse(readFileSync(join(home, 'quota-usage.json'), 'utf8'));
        expect(usage.day).toBe(new Date().toISOString().slice(0, 10));
        expect(usage.cpu_usec.local).toBeGreaterThan(900_000);
        expect(usage.cpu_usec.local).toBeLessThan(5_000_000);
        const untilMidnight = 86_400_000 - (Date.now() % 86_400_000);
        const refused = await bash(server, 'echo no');
        expect(refused.value).toMatchObject({ code: 'QUOTA_EXCEEDED', limit: 'cpu_seconds_per_day' });
        expect(Math.abs((refused.value.retry_after_ms ?? 0) - untilMidnight)).toBeLessThan(5000);
        await server.close();
        server = await startServer({ env, home });
        const after = await bash(server, 'echo still no');
        expect(after.value).toMatchObject({ code: 'QUOTA_EXCEEDED', limit: 'cpu_seconds_per_day' });
        expect(after.value.error).toContain('cpu_seconds_per_day=0.5');
      } finally {
        await server?.close();
        server = undefined;
        rmSync(home, { recursive: true, force: true });
      }
    },
  );
});

describe('a bad CODEXEC_QUOTAS file stops start-up', () => {
  const home = tempDir();
  afterAll(() => rmSync(home, { recursive: true, force: true }));
  const serve = (file: string) =>
    spawnSync(process.execPath, [CLI, 'serve'], {
      input: '',
      env: { ...baseEnv(home), CODEXEC_QUOTAS: file },
      encoding: 'utf8',
      timeout: 30_000,
    });

  it.each([
    [{ alice: { runs_per_min: 5 } }, 'alice: unknown field runs_per_min'],
    [{ '*': { max_sessions: -1 } }, '*.max_sessions: '],
    [{ '*': { max_concurrent_runs: 1.5 } }, '*.max_concurrent_runs: '],
    ['{"*": ', 'not valid JSON'],
  ])('%j → exit 2 naming the file and the field', (quotas, message) => {
    const file = quotasFile(quotas);
    const { status, stderr } = serve(file);
    expect(status).toBe(2);
    expect(stderr).toContain(`codexec: CODEXEC_QUOTAS: ${file}: ${message}`);
  });

  it('a file that is not there', () => {
    const { status, stderr } = serve(join(home, 'missing.json'));
    expect(status).toBe(2);
    expect(stderr).toContain(`CODEXEC_QUOTAS: cannot read ${join(home, 'missing.json')} (ENOENT)`);
  });
});
