// Artifact lists bounded in entries and bytes (a result the client can read): a run that makes thousands of files
// with long names in deeply nested long-named directories gets a small result that says what was
// left out (`artifacts_omitted`), the server answers ping within 2 s meanwhile, the connection
// survives; the same bound for execute_command, send_to_session and the execution log.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { callTool, startServer, type TestServer } from '../helpers/server.js';

/** 12 nested directories with 250-character names, `files` files with 250-character names in the deepest. */
const attack = (files: number) => `
import os
d = "."
for i in range(12):
    d = os.path.join(d, chr(97 + i) * 250)
os.makedirs(d)
fd = os.open(d, os.O_RDONLY)
for i in range(${files}):
    os.close(os.open(f"{i:05d}" + "x" * 245, os.O_WRONLY | os.O_CREAT, dir_fd=fd))
print("made")
`;

interface Run {
  success: boolean;
  stdout: string;
  execution_id: string;
  artifacts: string[];
  artifacts_deleted: string[];
  artifacts_omitted?: { created: number; modified: number; deleted: number };
}

const timed = async (work: () => Promise<unknown>) => {
  const started = Date.now();
  await work();
  return Date.now() - started;
};

/** Run `call` while pinging the server; returns the call's result, its size and the slowest ping. */
async function underPing<T>(server: TestServer, call: () => Promise<T>) {
  let done = false;
  const pings: number[] = [];
  const pinger = (async () => {
    while (!done) {
      pings.push(await timed(() => server.client.ping()));
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  })();
  try {
    return { result: await call(), slowest: Math.max(0, ...pings) };
  } finally {
    done = true;
    await pinger;
  }
}

describe('artifact lists past CODEXEC_MAX_ARTIFACTS / CODEXEC_MAX_ARTIFACT_BYTES', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startServer({ env: { CODEXEC_DEFAULT_TIMEOUT_MS: '120000' } });
  });
  afterAll(() => server.close());

  it('the attack as written: a small result naming what was left out; ping answers; the client survives', async () => {
    const { result, slowest } = await underPing(server, () =>
      callTool<Run>(server.client, 'execute_code', { language: 'python', code: attack(3000) }),
    );
    expect(result.isError).toBe(false);
    expect(result.value.stdout).toBe('made\n');
    // The default bounds: 200 entries, 64 KiB of names (each name here is ~3.3 KB: ~19 fit).
    const listed = result.value.artifacts;
    expect(listed.length).toBeGreaterThan(0);
    expect(listed.length).toBeLessThanOrEqual(200);
    expect(listed.reduce((sum, name) => sum + Buffer.byteLength(name), 0)).toBeLessThanOrEqual(64 * 1024);
    expect(result.value.artifacts_omitted).toEqual({
      created: 3000 - listed.length,
      modified: 0,
      deleted: 0,
    });
    expect(result.text.length).toBeLessThan(200 * 1024);
    expect(slowest).toBeLessThan(2000);
    // The log entry is bounded the same way and says so.
    const log = readdirSync(join(server.home, 'logs'))
      .filter((name) => name.startsWith('executions-'))
      .map((name) => readFileSync(join(server.home, 'logs', name), 'utf8'))
      .join('');
    expect(log.length).toBeLessThan(200 * 1024);
    const entry = await callTool<Record<string, unknown>>(server.client, 'get_execution_log', {
      execution_id: result.value.execution_id,
    });
    expect((entry.value.artifacts_created as string[]).length).toBe(listed.length);
    expect(entry.value.artifacts_omitted).toEqual({ created: 3000 - listed.length, modified: 0, deleted: 0 });
    // The connection is alive and the server serves on.
    const after = await callTool<Run>(server.client, 'execute_code', { language: 'bash', code: 'echo ok' });
    expect(after.value.stdout).toBe('ok\n');
  }, 180_000);

  it('the attack at full scale (10,000 files): the walk stops at its bound and the result says so', async () => {
    const { result, slowest } = await underPing(server, () =>
      callTool<Run>(server.client, 'execute_code', { language: 'python', code: attack(10_000) }),
    );
    expect(result.value.stdout).toBe('made\n');
    expect(result.value.artifacts_omitted).toMatchObject({ modified: 0, deleted: 0, walk_stopped: true });
    expect(result.text.length).toBeLessThan(200 * 1024);
    expect(slowest).toBeLessThan(2000);
  }, 180_000);

  it('counts past CODEXEC_MAX_ARTIFACTS in execute_command, deleted files too', async () => {
    const small = await startServer({ env: { CODEXEC_MAX_ARTIFACTS: '5' } });
    try {
      const made = await callTool<Run>(small.client, 'execute_command', {
        command: 'mkdir -p out && for i in $(seq 1 12); do echo $i > out/f$i.txt; done',
      });
      expect(made.value.artifacts).toHaveLength(5);
      expect(made.value.artifacts_omitted).toEqual({ created: 7, modified: 0, deleted: 0 });
      const gone = await callTool<Run>(small.client, 'execute_command', { command: 'rm -r out' });
      expect(gone.value.artifacts_deleted).toHaveLength(5);
      expect(gone.value.artifacts_omitted).toEqual({ created: 0, modified: 0, deleted: 7 });
      // Under the bound: no artifacts_omitted at all.
      const few = await callTool<Run>(small.client, 'execute_command', { command: 'echo 1 > one.txt' });
      expect(few.value.artifacts).toEqual(['one.txt']);
      expect(few.value.artifacts_omitted).toBeUndefined();
    } finally {
      await small.close();
    }
  });

  it('bounds a session send by bytes (CODEXEC_MAX_ARTIFACT_BYTES)', async () => {
    const small = await startServer({ env: { CODEXEC_MAX_ARTIFACT_BYTES: '1024' } });
    try {
      const session = await callTool<{ session_id: string }>(small.client, 'start_session', {
        language: 'python',
      });
      const sent = await callTool<Run>(small.client, 'send_to_session', {
        session_id: session.value.session_id,
        code: 'for i in range(40):\n    open(f"{i:03d}" + "n" * 97, "w").close()',
      });
      // 100-byte names: 10 fit in 1024 bytes.
      expect(sent.value.artifacts).toHaveLength(10);
      expect(sent.value.artifacts_omitted).toEqual({ created: 30, modified: 0, deleted: 0 });
    } finally {
      await small.close();
    }
  });
});
