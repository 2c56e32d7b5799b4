// Execution logs and audit entries belong to the principal that made them: over serve --http, with a token file of two principals, each sees only its own runs in
// search_execution_logs and get_execution_log; stdio is principal `local` and sees its own (and
// the lines written before principals existed); the operator's CLI sees everyone's.
import { execFileSync } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectHttp, type HttpServer, startHttp } from '../helpers/http.js';
import { baseEnv, CLI, callTool, startServer, tempDir } from '../helpers/server.js';

interface Page {
  results: Array<{ execution_id: string; code_preview: string }>;
  total_count: number;
}

const ALICE = 'alice-token-0123456789';
const BOB = 'bob-token-0123456789ab';
const yesterday = new Date(Date.now() - 86_400_000).toISOString();
// An entry written before entries named their principal: the local operator's.
const LEGACY = {
  type: 'execution',
  execution_id: 'exec_0123456789ab',
  session_id: null,
  language: 'python',
  code: 'print("legacyword")',
  stdin: null,
  stdout: 'legacyword\n',
  stderr: '',
  exit_code: 0,
  timed_out: false,
  cancelled: false,
  duration_ms: 5,
  memory_peak_mb: null,
  sandbox_mode: 'namespace',
  working_dir: '/tmp',
  artifacts: { created: [], modified: [], deleted: [] },
  executed_at: yesterday,
};

describe('serve --http: execution logs and audit entries belong to their principal', () => {
  let dir: string;
  let home: string;
  let server: HttpServer;
  const ids: Record<string, string> = {};

  beforeAll(async () => {
    dir = tempDir();
    home = tempDir();
    const tokens = join(dir, 'tokens.json');
    writeFileSync(tokens, JSON.stringify({ alice: ALICE, bob: BOB }));
    mkdirSync(join(home, 'logs'), { recursive: true });
    writeFileSync(
      join(home, 'logs', `executions-${yesterday.slice(0, 10)}.jsonl`),
      `${JSON.stringify(LEGACY)}\n`,
    );
    server = await startHttp({ home, env: { CODEXEC_HTTP_TOKENS: tokens } });
    for (const [name, token, era] of [
      ['alice', ALICE, 'modern'],
      ['bob', BOB, 'legacy'],
    ] as const) {
      const client = await connectHttp(server.url, token, era);
      const run = await callTool<{ execution_id: string }>(client, 'execute_code', {
        language: 'python',
        code: `print("${name}word")`,
      });
      ids[name] = run.value.execution_id;
      const session = await callTool<{ session_id: string }>(client, 'start_session', { language: 'bash' });
      const sent = await callTool<{ execution_id: string }>(client, 'send_to_session', {
        session_id: session.value.session_id,
        code: `echo ${name}session`,
      });
      ids[`${name}-send`] = sent.value.execution_id;
      await client.close();
    }
  }, 120_000);

  afterAll(async () => {
    await server?.stop();
    rmSync(home, { recursive: true, force: true });
    rmSync(dir, { recursive: true, force: true });
  });

  it('search shows a principal its own runs and sends, never another principal’s', async () => {
    for (const [name, other, token, era] of [
      ['alice', 'bob', ALICE, 'legacy'],
      ['bob', 'alice', BOB, 'modern'],
    ] as const) {
      const client = await connectHttp(server.url, token, era);
      const all = await callTool<Page>(client, 'search_execution_logs', {});
      expect(all.value.results.map((r) => r.execution_id).sort()).toEqual(
        [ids[name], ids[`${name}-send`]].sort(),
      );
      expect(all.value.total_count).toBe(2);
      const own = await callTool<Page>(client, 'search_execution_logs', { query: `${name}word` });
      expect(own.value.results.map((r) => r.execution_id)).toEqual([ids[name]]);
      for (const query of [`${other}word`, `${other}session`, 'legacyword']) {
        const none = await callTool<Page>(client, 'search_execution_logs', { query });
        expect(none.value, query).toEqual({ results: [], total_count: 0 });
      }
      // The counts kept per principal answer language/status-only searches.
      const python = await callTool<Page>(client, 'search_execution_logs', {
        language: 'python',
        status: 'success',
      });
      expect(python.value.total_count).toBe(1);
      await client.close();
    }
  }, 60_000);

  it('get_execution_log of another principal’s run is NOT_FOUND, exactly like an unknown id', async () => {
    const bob = await connectHttp(server.url, BOB, 'modern');
    const refused = await callTool<{ code: string; error: string }>(bob, 'get_execution_log', {
      execution_id: ids.alice,
    });
    expect(refused.isError).toBe(true);
    expect(refused.value.code).toBe('NOT_FOUND');
    const unknown = await callTool<{ code: string; error: string }>(bob, 'get_execution_log', {
      execution_id: 'exec_ffffffffffff',
    });
    expect(refused.value.error.replace(ids.alice as string, 'ID')).toBe(
      unknown.value.error.replace('exec_ffffffffffff', 'ID'),
    );
    const own = await callTool<{ stdout: string }>(bob, 'get_execution_log', { execution_id: ids.bob });
    expect(own.value.stdout).toBe('bobword\n');
    await bob.close();
  }, 60_000);

  it('resources/read of a file of another principal’s run is refused', async () => {
    const alice = await connectHttp(server.url, ALICE, 'modern');
    const bob = await connectHttp(server.url, BOB, 'legacy');
    const run = await callTool<{ execution_id: string }>(alice, 'execute_code', {
      language: 'bash',
      code: 'echo secret > notes.txt',
    });
    const uri = `codexec://exec/${run.value.execution_id}/notes.txt`;
    expect((await alice.readResource({ uri })).contents[0]).toMatchObject({ text: 'secret\n' });
    await expect(bob.readResource({ uri })).rejects.toThrow(/No execution/);
    await alice.close();
    await bob.close();
  }, 60_000);

  it('audit entries name their principal, and the chain verifies', () => {
    const file = readdirSync(join(home, 'logs')).find((name) => /^audit-\d/.test(name));
    const entries = readFileSync(join(home, 'logs', file as string), 'utf8')
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { principal: string; input_code: string });
    const byCode = Object.fromEntries(entries.map((entry) => [entry.input_code, entry.principal]));
    expect(byCode['print("aliceword")']).toBe('alice');
    expect(byCode['echo bobsession']).toBe('bob');
    expect(() =>
      execFileSync(process.execPath, [CLI, 'audit', 'verify'], { env: baseEnv(home) }),
    ).not.toThrow();
  });

  it('stdio is principal local: it sees its own and older lines; the CLI sees everyone’s', async () => {
    const stdio = await startServer({ home });
    try {
      const all = await callTool<Page>(stdio.client, 'search_execution_logs', {});
      expect(all.value.results.map((r) => r.execution_id)).toEqual([LEGACY.execution_id]);
      const refused = await callTool<{ code: string }>(stdio.client, 'get_execution_log', {
        execution_id: ids.alice,
      });
      expect(refused.value.code).toBe('NOT_FOUND');
      const legacy = await callTool<{ stdout: string }>(stdio.client, 'get_execution_log', {
        execution_id: LEGACY.execution_id,
      });
      expect(legacy.value.stdout).toBe('legacyword\n');
    } finally {
      await stdio.close();
    }
    const cli = JSON.parse(
      execFileSync(process.execPath, [CLI, 'logs', 'search', '--json', '-n', '50'], {
        env: baseEnv(home),
        encoding: 'utf8',
      }),
    ) as Page;
    expect(cli.total_count).toBe(6);
  }, 60_000);
});
