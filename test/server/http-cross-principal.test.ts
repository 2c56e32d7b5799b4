// Another principal's ids are unknown ids, whatever names them. Over serve --http with two tokens,
// alice makes one of everything a later call can name (a run with saved output, a session with a
// background process, a saved script); bob then calls every tool of tools/list whose input names
// such a thing, and reads every resource template, once with alice's id and once with an id that
// never existed. The two answers must be the same (the id aside): a new tool or template is
// walked as soon as it is listed.
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Client } from '@modelcontextprotocol/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectHttp, type HttpServer, startHttp } from '../helpers/http.js';
import { callTool, tempDir } from '../helpers/server.js';

const ALICE = 'alice-token-0123456789';
const BOB = 'bob-token-0123456789ab';
const NEVER = {
  session_id: 'sess_000000000000',
  process_id: 'proc_000000000000',
  execution_id: 'exec_000000000000',
  name: 'never-saved-script',
};
type Kind = keyof typeof NEVER;

/** What a tool needs besides the id: one plausible value per argument name. */
const FILLERS: Record<string, unknown> = {
  language: 'python',
  code: 'print(1)',
  path: 'stdout',
  content: 'x',
  command: 'true',
  data: 'x',
  input: 'x',
  package: 'x',
  query: 'x',
};

interface Answer {
  readonly isError: boolean;
  readonly code: string | undefined;
  readonly text: string;
}

function normal(text: string, ids: Record<Kind, string>): string {
  let out = text;
  for (const kind of Object.keys(NEVER) as Kind[]) out = out.split(ids[kind]).join(NEVER[kind]);
  return out;
}

async function call(client: Client, tool: string, args: Record<string, unknown>): Promise<Answer> {
  const result = await client.callTool({ name: tool, arguments: args });
  const text = ((result.content as Array<{ text?: string }>)[0]?.text ?? '') as string;
  const code = (result.structuredContent as { code?: string } | undefined)?.code;
  return { isError: result.isError === true, code, text };
}

describe("serve --http: another principal's ids are unknown ids", () => {
  let dir: string;
  let server: HttpServer;
  let alice: Client;
  let bob: Client;
  const ids = {} as Record<Kind, string>;

  beforeAll(async () => {
    dir = tempDir();
    const tokens = join(dir, 'tokens.json');
    writeFileSync(tokens, JSON.stringify({ alice: ALICE, bob: BOB }));
    server = await startHttp({ env: { CODEXEC_HTTP_TOKENS: tokens, CODEXEC_MAX_OUTPUT_CHARS: '200' } });
    alice = await connectHttp(server.url, ALICE, 'modern');
    bob = await connectHttp(server.url, BOB, 'legacy');
    const run = await callTool<{ execution_id: string }>(alice, 'execute_code', {
      language: 'python',
      code: 'print("a" * 5000)',
    });
    ids.execution_id = run.value.execution_id;
    const session = await callTool<{ session_id: string }>(alice, 'start_session', { language: 'bash' });
    ids.session_id = session.value.session_id;
    await callTool(alice, 'write_file', { session_id: ids.session_id, path: 'stdout', content: 'mine' });
    const proc = await callTool<{ process_id: string }>(alice, 'start_process', {
      session_id: ids.session_id,
      command: 'sleep 60',
    });
    ids.process_id = proc.value.process_id;
    await callTool(alice, 'save_script', { name: 'alices-script', language: 'python', code: 'print(2)' });
    ids.name = 'alices-script';
  }, 120_000);

  afterAll(async () => {
    await alice?.close();
    await bob?.close();
    await server?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('every tool that names a session, process, run or script', async () => {
    const { tools } = await bob.listTools();
    const walked: string[] = [];
    for (const tool of tools) {
      const properties = (tool.inputSchema.properties ?? {}) as Record<string, unknown>;
      const required = new Set((tool.inputSchema.required ?? []) as string[]);
      const kinds = (Object.keys(NEVER) as Kind[]).filter(
        (kind) => kind in properties && (kind !== 'name' || tool.name.includes('script')),
      );
      for (const kind of kinds) {
        const base: Record<string, unknown> = {};
        for (const name of required) if (name in FILLERS) base[name] = FILLERS[name];
        const theirs = await call(bob, tool.name, { ...base, [kind]: ids[kind] });
        const never = await call(bob, tool.name, { ...base, [kind]: NEVER[kind] });
        // A refusal, or (a search filter) the empty answer a never-used id gets.
        expect({ tool: tool.name, kind, isError: theirs.isError, code: theirs.code }).toEqual({
          tool: tool.name,
          kind,
          isError: never.isError,
          code: never.code,
        });
        expect({ tool: tool.name, kind, text: normal(theirs.text, ids) }).toEqual({
          tool: tool.name,
          kind,
          text: never.text,
        });
        walked.push(`${tool.name}.${kind}`);
      }
    }
    // The walk found what it must have: a change that hides these from it fails here.
    expect(walked).toEqual(
      expect.arrayContaining([
        'send_to_session.session_id',
        'close_session.session_id',
        'read_file.session_id',
        'read_file.execution_id',
        'write_file.session_id',
        'get_execution_log.execution_id',
        'read_process_output.process_id',
        'kill_process.process_id',
        'start_process.session_id',
        'get_script.name',
        'run_script.name',
      ]),
    );
  }, 120_000);

  it("an ended run's files: the same refusal as for an id never used", async () => {
    const wrote = await callTool<{ execution_id: string }>(alice, 'execute_code', {
      language: 'python',
      code: 'open("secret.txt", "w").write("alice only")',
    });
    const id = wrote.value.execution_id;
    expect(
      (await callTool<{ content: string }>(alice, 'read_file', { execution_id: id, path: 'secret.txt' }))
        .value.content,
    ).toBe('alice only');
    const theirs = await call(bob, 'read_file', { execution_id: id, path: 'secret.txt' });
    const never = await call(bob, 'read_file', { execution_id: NEVER.execution_id, path: 'secret.txt' });
    expect(theirs).toMatchObject({ isError: true, code: 'NOT_FOUND' });
    expect(normal(theirs.text, { ...ids, execution_id: id })).toBe(never.text);
  });

  it('every resource template', async () => {
    const { resourceTemplates } = await bob.listResourceTemplates();
    expect(resourceTemplates.length).toBeGreaterThan(0);
    const read = async (uri: string) => {
      try {
        await bob.readResource({ uri });
        return 'read';
      } catch (error) {
        return (error as Error).message;
      }
    };
    for (const { uriTemplate } of resourceTemplates) {
      const fill = (values: Record<Kind, string>) =>
        uriTemplate.replace(/\{\+?([a-z_]+)\}/g, (_, name: string) => {
          if (name.includes('session')) return values.session_id;
          if (name.includes('exec') || name === 'id') return values.execution_id;
          return 'stdout';
        });
      const theirs = await read(fill(ids));
      const never = await read(fill(NEVER));
      expect({ uriTemplate, answer: normal(theirs, ids) }).toEqual({ uriTemplate, answer: never });
      expect(theirs).not.toBe('read');
    }
  }, 60_000);
});
