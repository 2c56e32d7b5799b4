import { spawnSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { baseEnv, CLI, callTool, startServer, type TestServer, tempDir } from '../helpers/server.js';

// CODEXEC_MAX_TIMEOUT_MS=2000 set alone is below the default timeout; the default moves to fit
// rather than stopping start-up with exit 2, as it once did.

describe('codexec serve with CODEXEC_MAX_TIMEOUT_MS=2000 alone', () => {
  let server: TestServer;

  beforeAll(async () => {
    server = await startServer({ env: { CODEXEC_MAX_TIMEOUT_MS: '2000', CODEXEC_KILL_GRACE_MS: '500' } });
  });
  afterAll(() => server.close());

  it('starts, says on stderr that the default timeout was lowered, and applies 2000 ms', async () => {
    const { value } = await callTool<Record<string, unknown>>(server.client, 'execute_code', {
      language: 'python',
      code: 'import time\nprint("started", flush=True)\ntime.sleep(20)',
    });
    expect(value).toMatchObject({ success: false, timed_out: true, exit_code: null, stdout: 'started\n' });
    expect(value.stderr).toContain('timed out after 2000 ms');
    expect(server.stderr()).toContain(
      'codexec warn: CODEXEC_DEFAULT_TIMEOUT_MS lowered from its default 30000 to 2000 to fit CODEXEC_MAX_TIMEOUT_MS=2000',
    );
  });
});

describe('codexec doctor with settings in conflict', () => {
  const home = tempDir();
  afterAll(() => rmSync(home, { recursive: true, force: true }));

  it('still exits 2 naming the setting when both conflicting values were set; doctor says so and goes on', () => {
    const env = { ...baseEnv(home), CODEXEC_MAX_TIMEOUT_MS: '2000', CODEXEC_DEFAULT_TIMEOUT_MS: '9000' };
    const serve = spawnSync(process.execPath, [CLI, 'serve'], { env, encoding: 'utf8', input: '' });
    expect(serve.status).toBe(2);
    expect(serve.stderr).toContain(
      'CODEXEC_DEFAULT_TIMEOUT_MS: must not exceed CODEXEC_MAX_TIMEOUT_MS (2000)',
    );
    const doctor = spawnSync(process.execPath, [CLI, 'doctor'], { env, encoding: 'utf8' });
    expect(doctor.status).toBe(2);
    expect(doctor.stdout).toMatch(
      /missing +configuration +CODEXEC_DEFAULT_TIMEOUT_MS: must not exceed CODEXEC_MAX_TIMEOUT_MS \(2000\)/,
    );
    expect(doctor.stdout).toContain('interpreters'); // to the end
  });
});
