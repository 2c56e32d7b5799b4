// Output past the truncation cap is kept and paged (nothing a run printed is lost): a
// truncated result says where (output_saved), read_file {execution_id,
// path, offset, length} pages it back byte-exact, resources/read returns it whole; a run that
// fits keeps nothing; secrets are masked in the saved copy; CODEXEC_MAX_SAVED_OUTPUT_BYTES caps
// it; retention removes it with the log entry; another principal cannot read it.
import { existsSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Client } from '@modelcontextprotocol/client';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { connectHttp, type HttpServer, startHttp } from '../helpers/http.js';
import { callTool, startServer, type TestServer, type ToolCall, tempDir } from '../helpers/server.js';

const LINES = 200_000;
/** Multi-byte characters on every line: odd slice lengths cut through them. */
const BIG = `import sys\nw = sys.stdout.write\nfor i in range(${LINES}):\n    w(f"{i:06d} é€😀\\n")\n`;
const EXPECTED = Array.from({ length: LINES }, (_, i) => `${String(i).padStart(6, '0')} é€😀\n`).join('');

interface Saved {
  bytes: number;
  uri: string;
  partial: boolean;
}
interface Run {
  execution_id: string;
  stdout: string;
  stderr: string;
  truncated: boolean;
  output_saved?: { stdout?: Saved; stderr?: Saved };
}
interface Slice {
  content: string;
  bytes: number;
  total_bytes: number;
  offset: number;
  next_offset: number | null;
}

/** Every slice from offset 0 on, `length` bytes a call. */
async function pageAll(client: Client, id: string, path: string, length?: number) {
  let text = '';
  let offset: number | null = 0;
  let calls = 0;
  let total = 0;
  while (offset !== null) {
    const read: ToolCall<Slice> = await callTool<Slice>(client, 'read_file', {
      execution_id: id,
      path,
      offset,
      ...(length && { length }),
    });
    expect(read.isError, read.text).toBe(false);
    expect(read.value.offset).toBe(offset);
    text += read.value.content;
    total = read.value.total_bytes;
    offset = read.value.next_offset;
    calls++;
  }
  return { text, calls, total };
}

function savedFiles(home: string): string[] {
  const root = join(home, 'output');
  if (!existsSync(root)) return [];
  return readdirSync(root).flatMap((dir) =>
    readdirSync(join(root, dir)).map((name) => join(root, dir, name)),
  );
}

describe('saved output over stdio', () => {
  let server: TestServer;
  let big: Run;
  const secret = 'fooKey-9f8e7d6c5b4a3';

  beforeAll(async () => {
    server = await startServer({ env: { FOO_API_KEY: secret } });
    big = (await callTool<Run>(server.client, 'execute_code', { language: 'python', code: BIG })).value;
  }, 120_000);
  afterAll(async () => {
    await server?.close();
  });

  it('truncates the result and says where the whole output is', () => {
    expect(big.truncated).toBe(true);
    expect(big.stdout.length).toBeLessThan(20_000);
    const bytes = Buffer.byteLength(EXPECTED);
    expect(big.output_saved).toEqual({
      stdout: { bytes, uri: `codexec://exec/${big.execution_id}/stdout`, partial: false },
    });
    // The seed's mark on a line of its own; under it, the read_file call that pages the rest.
    expect(big.stdout).toMatch(/\n\[\.\.\. truncated \d+ characters \.\.\.\]\n\[the rest: read_file /);
    expect(big.stdout.endsWith(EXPECTED.slice(-100))).toBe(true);
    const [file] = savedFiles(server.home);
    expect(file).toMatch(new RegExp(`${big.execution_id}\\.stdout$`));
    expect(statSync(file as string).mode & 0o777).toBe(0o600);
  });

  it('pages it back exactly with read_file, whatever the slice length', async () => {
    const whole = await pageAll(server.client, big.execution_id, 'stdout');
    expect(whole.total).toBe(Buffer.byteLength(EXPECTED));
    expect(whole.text === EXPECTED).toBe(true);
    expect(whole.calls).toBe(Math.ceil(whole.total / 65_536));
    // 100,003 bytes a slice: cuts fall inside characters, which go whole to the next slice.
    const odd = await pageAll(server.client, big.execution_id, 'stdout', 100_003);
    expect(odd.text === EXPECTED).toBe(true);
  }, 120_000);

  it('starts a slice at the next whole character when offset falls inside one', async () => {
    const at = EXPECTED.indexOf('😀');
    const byte = Buffer.byteLength(EXPECTED.slice(0, at)) + 1; // inside the 4-byte emoji
    const read = await callTool<Slice>(server.client, 'read_file', {
      execution_id: big.execution_id,
      path: 'stdout',
      offset: byte,
      length: 5,
    });
    expect(read.value.offset).toBe(byte + 3);
    expect(read.value.content).toBe('\n0'); // the newline and the next line's first digit
    expect(read.value.next_offset).toBe(byte + 5);
    // Shorter than the character at the offset: that character, whole.
    const one = await callTool<Slice>(server.client, 'read_file', {
      execution_id: big.execution_id,
      path: 'stdout',
      offset: byte - 1,
      length: 1,
    });
    expect(one.value.content).toBe('😀');
    expect(one.value.next_offset).toBe(byte + 3);
  });

  it('links the saved output after the result', async () => {
    const result = await server.client.callTool({
      name: 'execute_code',
      arguments: { language: 'python', code: 'print("q" * 20000)' },
    });
    const id = (result.structuredContent as { execution_id: string }).execution_id;
    const links = (result.content as Array<{ type: string; uri?: string; size?: number }>).filter(
      (block) => block.type === 'resource_link',
    );
    expect(links).toEqual([
      expect.objectContaining({ uri: `codexec://exec/${id}/stdout`, size: 20001, mimeType: 'text/plain' }),
    ]);
  });

  it('returns it whole as the resource codexec://exec/<id>/stdout', async () => {
    const read = await server.client.readResource({ uri: `codexec://exec/${big.execution_id}/stdout` });
    const content = read.contents[0] as { text?: string };
    expect(content.text === EXPECTED).toBe(true);
    const templates = await server.client.listResourceTemplates();
    expect(templates.resourceTemplates.map((t) => t.uriTemplate)).toContain(
      'codexec://exec/{execution_id}/{stream}',
    );
  });

  it('refuses malformed ids, mixed targets and unknown executions', async () => {
    const bad = await callTool(server.client, 'read_file', { execution_id: 'exec_../x', path: 'stdout' });
    expect(bad.isError).toBe(true);
    expect(bad.value.code).toBe('INVALID_INPUT');
    const mixed = await callTool(server.client, 'read_file', {
      execution_id: big.execution_id,
      workspace: 'command',
      path: 'stdout',
    });
    expect(mixed.value.code).toBe('INVALID_INPUT');
    // Another path is a file of the run's (test/server/run-files.test.ts): this one left none.
    const path = await callTool(server.client, 'read_file', {
      execution_id: big.execution_id,
      path: 'x.txt',
    });
    expect(path.value.code).toBe('NOT_FOUND');
    const unknown = await callTool(server.client, 'read_file', {
      execution_id: 'exec_000000000000',
      path: 'stdout',
    });
    expect(unknown.value.code).toBe('NOT_FOUND');
    const stderr = await callTool(server.client, 'read_file', {
      execution_id: big.execution_id,
      path: 'stderr',
    });
    expect(stderr.value.code).toBe('NOT_FOUND');
    expect(String(stderr.value.error)).toContain('kept no stderr');
  });

  it('keeps nothing for a run whose output fits', async () => {
    const before = savedFiles(server.home).length;
    const small = await callTool<Run>(server.client, 'execute_code', {
      language: 'python',
      code: 'print("x" * 9000)',
    });
    expect(small.value.truncated).toBe(false);
    expect(small.value.output_saved).toBeUndefined();
    expect(savedFiles(server.home)).toHaveLength(before);
    const read = await callTool(server.client, 'read_file', {
      execution_id: small.value.execution_id,
      path: 'stdout',
    });
    expect(read.value.code).toBe('NOT_FOUND');
  });

  it('masks secrets in the saved copy, one split across writes too', async () => {
    const reversed = [...secret].reverse().join('');
    const code = [
      'import sys, time',
      `s = ${JSON.stringify(reversed)}[::-1]`,
      'for i in range(3000): print("filler line", i)',
      'print("mid:", s)',
      'sys.stdout.write("split:" + s[:12]); sys.stdout.flush(); time.sleep(0.3)',
      'sys.stdout.write(s[12:] + "\\n"); sys.stdout.flush()',
      'for i in range(3000): print("filler line", i)',
      'print(s, file=sys.stderr)',
    ].join('\n');
    const run = (await callTool<Run>(server.client, 'execute_code', { language: 'python', code })).value;
    expect(run.output_saved?.stdout).toBeDefined();
    const whole = await pageAll(server.client, run.execution_id, 'stdout');
    expect(whole.text).toContain('mid: ***\n');
    expect(whole.text).toContain('split:***\n');
    expect(whole.text).not.toContain(secret.slice(0, 12));
    const onDisk = savedFiles(server.home).map((file) => readFileSync(file, 'utf8'));
    for (const text of onDisk) expect(text).not.toContain(secret.slice(0, 12));
  });

  it('pages the big output of a session send', async () => {
    const session = await callTool<{ session_id: string }>(server.client, 'start_session', {
      language: 'python',
    });
    const sent = await callTool<Run>(server.client, 'send_to_session', {
      session_id: session.value.session_id,
      code: BIG,
      timeout_ms: 60_000,
    });
    expect(sent.value.truncated).toBe(true);
    expect(sent.value.output_saved?.stdout?.bytes).toBe(Buffer.byteLength(EXPECTED));
    const whole = await pageAll(server.client, sent.value.execution_id, 'stdout', 1_000_000);
    expect(whole.text === EXPECTED).toBe(true);
    // The next send fits: it keeps nothing.
    const next = await callTool<Run>(server.client, 'send_to_session', {
      session_id: session.value.session_id,
      code: 'print(1)',
    });
    expect(next.value.output_saved).toBeUndefined();
  }, 120_000);
});

describe('saved output bounds and retention', () => {
  it('CODEXEC_MAX_SAVED_OUTPUT_BYTES keeps the start and says the copy is partial', async () => {
    const server = await startServer({
      env: { CODEXEC_MAX_SAVED_OUTPUT_BYTES: '100001', CODEXEC_MAX_FILE_TRANSFER_BYTES: '50000' },
    });
    try {
      const run = (await callTool<Run>(server.client, 'execute_code', { language: 'python', code: BIG }))
        .value;
      const saved = run.output_saved?.stdout;
      expect(saved?.partial).toBe(true);
      expect(saved?.bytes).toBeLessThanOrEqual(100_001);
      expect(saved?.bytes).toBeGreaterThan(100_001 - 4);
      const whole = await pageAll(server.client, run.execution_id, 'stdout');
      expect(whole.text === Buffer.from(EXPECTED).subarray(0, saved?.bytes).toString()).toBe(true);
      // Over CODEXEC_MAX_FILE_TRANSFER_BYTES: the resource names read_file paging.
      await expect(
        server.client.readResource({ uri: `codexec://exec/${run.execution_id}/stdout` }),
      ).rejects.toThrow(/page it with read_file/);
    } finally {
      await server.close();
    }
  }, 120_000);

  it('0 keeps nothing', async () => {
    const server = await startServer({ env: { CODEXEC_MAX_SAVED_OUTPUT_BYTES: '0' } });
    try {
      const run = (await callTool<Run>(server.client, 'execute_code', { language: 'python', code: BIG }))
        .value;
      expect(run.truncated).toBe(true);
      expect(run.output_saved).toBeUndefined();
      expect(run.stdout).toMatch(/\[\.\.\. truncated \d+ characters \.\.\.\]/);
      expect(savedFiles(server.home)).toEqual([]);
    } finally {
      await server.close();
    }
  }, 120_000);

  it('retention removes the saved output with its log entry', async () => {
    const home = tempDir();
    try {
      const first = await startServer({ home });
      const run = (await callTool<Run>(first.client, 'execute_code', { language: 'python', code: BIG }))
        .value;
      const kept = (await callTool<Run>(first.client, 'execute_code', { language: 'python', code: BIG }))
        .value;
      await first.close();
      expect(savedFiles(home)).toHaveLength(2);
      // Move the first run's entry 31 days back (a success: expired); the index is rebuilt.
      const logs = join(home, 'logs');
      const daily = readdirSync(logs).find((name) => name.startsWith('executions-')) as string;
      const lines = readFileSync(join(logs, daily), 'utf8').split('\n').filter(Boolean);
      const old = new Date(Date.now() - 31 * 86_400_000).toISOString();
      const moved = lines.filter((line) => line.includes(run.execution_id));
      expect(moved).toHaveLength(1);
      writeFileSync(
        join(logs, daily),
        lines
          .filter((line) => !moved.includes(line))
          .map((l) => `${l}\n`)
          .join(''),
      );
      const entry = { ...JSON.parse(moved[0] as string), executed_at: old };
      writeFileSync(join(logs, `executions-${old.slice(0, 10)}.jsonl`), `${JSON.stringify(entry)}\n`);
      for (const name of readdirSync(home).filter((n) => n.startsWith('index.db'))) rmSync(join(home, name));

      const second = await startServer({ home });
      try {
        await callTool(second.client, 'search_execution_logs', {});
        await vi.waitFor(() => expect(savedFiles(home)).toHaveLength(1), { timeout: 15_000, interval: 100 });
        expect(savedFiles(home)[0]).toContain(kept.execution_id);
        const gone = await callTool(second.client, 'read_file', {
          execution_id: run.execution_id,
          path: 'stdout',
        });
        expect(gone.value.code).toBe('NOT_FOUND');
        const still = await callTool<Slice>(second.client, 'read_file', {
          execution_id: kept.execution_id,
          path: 'stdout',
        });
        expect(still.isError).toBe(false);
      } finally {
        await second.close();
      }
    } finally {
      rmSync(home, { recursive: true, force: true });
    }
  }, 120_000);
});

describe('saved output belongs to its principal (serve --http)', () => {
  const ALICE = 'alice-token-0123456789';
  const BOB = 'bob-token-0123456789ab';
  let dir: string;
  let server: HttpServer;
  let alice: Client;
  let bob: Client;
  let id: string;

  beforeAll(async () => {
    dir = tempDir();
    const tokens = join(dir, 'tokens.json');
    writeFileSync(tokens, JSON.stringify({ alice: ALICE, bob: BOB }));
    server = await startHttp({ env: { CODEXEC_HTTP_TOKENS: tokens } });
    alice = await connectHttp(server.url, ALICE, 'legacy');
    bob = await connectHttp(server.url, BOB, 'legacy');
    id = (await callTool<Run>(alice, 'execute_code', { language: 'python', code: BIG })).value.execution_id;
  }, 120_000);
  afterAll(async () => {
    await Promise.allSettled([alice?.close(), bob?.close()]);
    await server?.stop();
    rmSync(server.home, { recursive: true, force: true });
    rmSync(dir, { recursive: true, force: true });
  });

  it('reads for its principal, not for another (the same answer as an unknown id)', async () => {
    const own = await callTool<Slice>(alice, 'read_file', { execution_id: id, path: 'stdout', length: 100 });
    expect(own.isError).toBe(false);
    expect(own.value.bytes).toBeGreaterThan(96);
    expect(own.value.bytes).toBeLessThanOrEqual(100);
    expect(own.value.content).toBe(EXPECTED.slice(0, own.value.content.length));
    const other = await callTool<{ code: string; error: string }>(bob, 'read_file', {
      execution_id: id,
      path: 'stdout',
    });
    const unknown = await callTool<{ code: string; error: string }>(bob, 'read_file', {
      execution_id: 'exec_000000000000',
      path: 'stdout',
    });
    expect(other.isError).toBe(true);
    expect(other.value.code).toBe('NOT_FOUND');
    expect(other.value.error.replace(id, 'ID')).toBe(unknown.value.error.replace('exec_000000000000', 'ID'));
    const uri = `codexec://exec/${id}/stdout`;
    expect(((await alice.readResource({ uri })).contents[0] as { text: string }).text === EXPECTED).toBe(
      true,
    );
    await expect(bob.readResource({ uri })).rejects.toThrow(/No execution/);
  });

  it("keeps a session send's output under the sender's principal", async () => {
    const session = await callTool<{ session_id: string }>(alice, 'start_session', { language: 'python' });
    const sent = await callTool<Run>(alice, 'send_to_session', {
      session_id: session.value.session_id,
      code: BIG,
      timeout_ms: 60_000,
    });
    expect(sent.value.output_saved?.stdout?.partial).toBe(false);
    const args = { execution_id: sent.value.execution_id, path: 'stdout', offset: 70_000, length: 1000 };
    const own = await callTool<Slice>(alice, 'read_file', args);
    expect(own.isError).toBe(false);
    expect(EXPECTED).toContain(own.value.content);
    const other = await callTool(bob, 'read_file', args);
    expect(other.value.code).toBe('NOT_FOUND');
    const folders = readdirSync(join(server.home, 'output'));
    expect(folders).toHaveLength(1);
    expect(folders[0]).toMatch(/^p_alice-/);
  }, 60_000);
});
