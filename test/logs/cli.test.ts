// `codexec logs search` / `codexec logs show`: the same filters and index as the MCP tools.
import { execFile } from 'node:child_process';
import { rmSync } from 'node:fs';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { baseEnv, CLI, tempDir } from '../helpers/server.js';
import { KEEP_ALL, writeOneshots, writeSession } from './fixtures.js';

const exec = promisify(execFile);

describe('codexec logs', () => {
  const home = tempDir();
  writeOneshots(home, [
    { id: 'exec_111111111111', at: '2026-04-01T10:00:00Z', code: 'import pandas', stdout: 'ok\n' },
    { id: 'exec_444444444444', at: '2026-03-01T10:00:00Z', code: 'print(1)', script_name: 'nightly' },
    {
      id: 'exec_222222222222',
      at: '2026-04-02T10:00:00Z',
      code: 'import numpy',
      stderr: "ModuleNotFoundError: No module named 'numpy'\n",
      exit_code: 1,
    },
  ]);
  writeSession(home, 'sess_333333333333', 'node', [
    { id: 'exec_333333333333', at: '2026-04-03T10:00:00Z', code: 'x' },
  ]);
  afterAll(() => rmSync(home, { recursive: true, force: true }));

  const cli = (...args: string[]) =>
    exec(process.execPath, [CLI, 'logs', ...args], { env: { ...baseEnv(home), ...KEEP_ALL } }).then(
      (out) => ({ code: 0, ...out }),
      (error: { code: number; stdout: string; stderr: string }) => error,
    );

  it('searches with filters, as JSON or as lines', async () => {
    const json = await cli('search', '--status', 'failed', '--language', 'python', '--json');
    expect(json.code).toBe(0);
    const page = JSON.parse(json.stdout);
    expect(page.total_count).toBe(1);
    expect(page.results[0]).toMatchObject({
      execution_id: 'exec_222222222222',
      error_preview: "ModuleNotFoundError: No module named 'numpy'",
    });
    const text = await cli('search', '-q', 'pandas', '--since', '2026-03-01', '-n', '5');
    expect(text.stdout).toMatch(/^exec_111111111111 {2}2026-04-01T10:00:00Z {2}python {2}success \(exit 0\)/);
    expect(text.stdout).toMatch(/1 shown of 1 matching/);
    const session = await cli('search', '--session-id', 'sess_333333333333', '--json');
    expect(JSON.parse(session.stdout).results[0]).toMatchObject({ language: 'node' });
    const script = await cli('search', '--script', 'nightly');
    expect(script.stdout).toMatch(/^exec_444444444444 .* script nightly\n/);
    expect(script.stdout).toMatch(/1 shown of 1 matching/);
  });

  it('shows one entry and refuses unknown ids and bad filters with exit code 2', async () => {
    const shown = await cli('show', 'exec_222222222222');
    expect(shown.stdout).toMatch(/exec_222222222222 {2}failed {2}exit 1/);
    expect(shown.stdout).toMatch(/--- stderr\nModuleNotFoundError/);
    const json = JSON.parse((await cli('show', 'exec_111111111111', '--json')).stdout);
    expect(json).toMatchObject({ execution_id: 'exec_111111111111', artifacts_created: ['out.csv'] });
    const unknown = await cli('show', 'exec_000000000000');
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toMatch(/No execution exec_000000000000/);
    const bad = await cli('search', '--status', 'crashed');
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/status/);
  });
});
