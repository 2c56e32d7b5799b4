// get_execution_log through the real server: real runs, seed-format entries, sessions, scripts.
import { rmSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { callTool, startServer, type TestServer, tempDir, textFacts } from '../helpers/server.js';
import { KEEP_ALL, writeOneshots, writeSession } from './fixtures.js';

describe('get_execution_log', () => {
  let server: TestServer;

  beforeAll(async () => {
    const home = tempDir();
    writeOneshots(home, [
      { id: 'exec_a1b2c3a1b2c3', at: '2026-02-09T14:30:01.123Z', code: 'import pandas', stdout: 'ok\n' },
      {
        id: 'exec_p1q2r3p1q2r3',
        at: '2026-02-10T08:00:00Z',
        code: 'print("Processed 150 rows")',
        script_name: 'parse-excel-report',
      },
    ]);
    writeSession(home, 'sess_x1y2z3x1y2z3', 'node', [
      { id: 'exec_j1k2l3j1k2l3', at: '2026-02-09T14:30:10Z', code: 'let x = 41', stdout: '' },
    ]);
    server = await startServer({ home, env: KEEP_ALL });
  });
  afterAll(async () => {
    await server.close();
    rmSync(server.home, { recursive: true, force: true });
  });

  it('returns the full entry of a real run, matching what execute_code returned', async () => {
    const code = 'from pathlib import Path\nPath("made.txt").write_text("hi")\nprint("done")';
    const run = await callTool<Record<string, unknown>>(server.client, 'execute_code', {
      language: 'python',
      code,
    });
    const got = await callTool<Record<string, unknown>>(server.client, 'get_execution_log', {
      execution_id: run.value.execution_id,
    });
    expect(got.isError).toBe(false);
    expect(got.value).toMatchObject({
      execution_id: run.value.execution_id,
      session_id: null,
      language: 'python',
      status: 'success',
      code,
      stdout: 'done\n',
      stderr: '',
      exit_code: 0,
      timed_out: false,
      cancelled: false,
      duration_ms: run.value.duration_ms,
      artifacts_created: ['made.txt'],
      artifacts_modified: [],
      artifacts_deleted: [],
      packages_installed: [],
      sandbox_mode: run.value.sandbox_mode,
      working_dir: run.value.working_dir,
    });
    expect(Date.parse(got.value.executed_at as string)).toBeGreaterThan(Date.now() - 60_000);
    expect(textFacts(got.text, got.value)).toMatchObject({ artifacts_created: ['made.txt'] });
    expect(got.text).toContain(`\ndone\n--- code ---\n${code}`);
  });

  it('returns a seed-format entry with the seed field names', async () => {
    const got = await callTool(server.client, 'get_execution_log', { execution_id: 'exec_a1b2c3a1b2c3' });
    expect(got.value).toEqual({
      execution_id: 'exec_a1b2c3a1b2c3',
      session_id: null,
      language: 'python',
      status: 'success',
      code: 'import pandas',
      stdin: null,
      stdout: 'ok\n',
      stderr: '',
      exit_code: 0,
      timed_out: false,
      cancelled: false,
      duration_ms: 12,
      memory_peak_mb: 45.2,
      packages_installed: [],
      artifacts_created: ['out.csv'],
      artifacts_modified: [],
      artifacts_deleted: [],
      sandbox_mode: 'subprocess',
      working_dir: '/tmp/sandbox/exec_a1b2c3a1b2c3',
      script_name: null,
      limit: null,
      guardian_pre_scan: { passed: true, flags: [] },
      guardian_post_scan: { passed: true, flags: [] },
      agent_id: 'annabelle',
      trace_id: 'tr_abc123',
      chat_id: 'telegram:12345',
      executed_at: '2026-02-09T14:30:01.123Z',
    });
  });

  it('returns session sends (language from session_start, time from `at`) and script runs', async () => {
    const send = await callTool(server.client, 'get_execution_log', { execution_id: 'exec_j1k2l3j1k2l3' });
    expect(send.value).toMatchObject({
      execution_id: 'exec_j1k2l3j1k2l3',
      session_id: 'sess_x1y2z3x1y2z3',
      language: 'node',
      code: 'let x = 41',
      exit_code: 0,
      duration_ms: 234,
      sandbox_mode: null,
      executed_at: '2026-02-09T14:30:10Z',
    });
    const script = await callTool(server.client, 'get_execution_log', { execution_id: 'exec_p1q2r3p1q2r3' });
    expect(script.value).toMatchObject({ script_name: 'parse-excel-report', stdout: '' });
  });

  it('finds a run_script execution like any other run', async () => {
    const saved = await callTool(server.client, 'save_script', {
      name: 'log-marker',
      description: 'prints a marker',
      language: 'python',
      code: 'import sys\nprint("script_marker", *sys.argv[1:])',
    });
    expect(saved.isError, saved.text).toBe(false);
    const run = await callTool<{ execution_id: string }>(server.client, 'run_script', {
      name: 'log-marker',
      args: ['one'],
    });
    expect(run.isError, run.text).toBe(false);
    const found = await callTool<{ results: Array<{ execution_id: string }> }>(
      server.client,
      'search_execution_logs',
      { query: 'script_marker' },
    );
    expect(found.value.results.map((r) => r.execution_id)).toEqual([run.value.execution_id]);
    const got = await callTool(server.client, 'get_execution_log', { execution_id: run.value.execution_id });
    expect(got.value).toMatchObject({
      status: 'success',
      stdout: 'script_marker one\n',
      language: 'python',
      script_name: 'log-marker',
    });
  });

  it('refuses an unknown id with NOT_FOUND and bad input with INVALID_INPUT', async () => {
    const unknown = await callTool(server.client, 'get_execution_log', { execution_id: 'exec_000000000000' });
    expect(unknown.isError).toBe(true);
    expect(unknown.value).toMatchObject({ success: false, code: 'NOT_FOUND' });
    expect(unknown.value.error).toMatch(/exec_000000000000/);
    for (const args of [{}, { execution_id: '' }, { execution_id: 42 }]) {
      const bad = await callTool(server.client, 'get_execution_log', args);
      expect(bad.isError).toBe(true);
      expect(bad.value).toMatchObject({ code: 'INVALID_INPUT' });
    }
  });
});
