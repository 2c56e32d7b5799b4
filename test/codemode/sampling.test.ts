// llm.ask / llm.think (code mode): sandboxed code asks the client's model through MCP
// sampling. A real SDK client over stdio declares sampling and answers sampling/createMessage; the
// run's rounds and tokens are limited; the secrets filter masks what goes out and what comes back;
// a client without sampling, and a 2026-era client (no server-to-client request during a call),
// get "sampling not available".
import { rmSync } from 'node:fs';
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { afterAll, describe, expect, it } from 'vitest';
import { baseEnv, CLI, callTool, tempDir } from '../helpers/server.js';

const SECRET = 'sk-live-0123456789abcdefSECRET';
const homes: string[] = [];
const clients: Client[] = [];
afterAll(async () => {
  for (const client of clients) await client.close();
  for (const home of homes) rmSync(home, { recursive: true, force: true });
});

interface Asked {
  messages: Array<{ role: string; content: { text: string } }>;
  systemPrompt?: string;
  maxTokens: number;
}

async function connect(options: { sampling: boolean; modern?: boolean; reply?: string }) {
  const home = tempDir();
  homes.push(home);
  const asked: Asked[] = [];
  const client = new Client({ name: 'sampling-tests', version: '1.0.0' }, {
    ...(options.modern && { versionNegotiation: { mode: { pin: '2026-07-28' } } }),
    ...(options.sampling && { capabilities: { sampling: {} } }),
  } as never);
  if (options.sampling) {
    client.setRequestHandler('sampling/createMessage', async (request) => {
      asked.push(request.params as unknown as Asked);
      const last = (request.params as unknown as Asked).messages.at(-1)?.content.text ?? '';
      return {
        role: 'assistant',
        model: 'test-model',
        content: { type: 'text', text: options.reply ?? `you said: ${last}` },
      } as never;
    });
  }
  await client.connect(
    new StdioClientTransport({
      command: process.execPath,
      args: [CLI, 'serve'],
      // The server's own environment holds the secret: the filter masks its value.
      env: { ...baseEnv(home), DEMO_API_TOKEN: SECRET },
    }),
  );
  clients.push(client);
  return { client, asked };
}

const run = (client: Client, language: string, code: string, extra: Record<string, unknown> = {}) =>
  callTool<{ stdout: string; stderr: string }>(client, 'execute_code', {
    language,
    code,
    enable_sampling: true,
    ...extra,
  });

describe('llm.ask / llm.think', () => {
  it("asks the client's model from python and node, with a system prompt and a token cap", async () => {
    const { client, asked } = await connect({ sampling: true });
    const py = await run(
      client,
      'python',
      'print(await llm.ask("2+2?"))\nimport codexec\nprint(await codexec.llm.ask("hi"))',
    );
    expect(py.value.stdout).toBe('you said: 2+2?\nyou said: hi\n');
    const js = await run(
      client,
      'node',
      'console.log(await llm.think({ messages: [{ role: "user", content: "think" }], systemPrompt: "be brief", maxTokens: 50 }))',
    );
    expect(js.value.stdout).toBe('you said: think\n');
    expect(asked.at(-1)).toMatchObject({ systemPrompt: 'be brief', maxTokens: 50 });
  }, 60_000);

  it('masks secrets in prompts and replies', async () => {
    const { client, asked } = await connect({ sampling: true, reply: `the key is ${SECRET}` });
    const { value } = await run(client, 'python', `print(await llm.ask("use ${SECRET} please"))`);
    expect(asked[0]?.messages[0]?.content.text).toBe('use *** please');
    expect(value.stdout).toBe('the key is ***\n');
  }, 60_000);

  it('raises once the rounds or the tokens of the run are used up', async () => {
    const { client } = await connect({ sampling: true });
    const rounds = await run(
      client,
      'node',
      'for (let i = 0; i < 3; i++) { try { await llm.ask("x"); console.log("ok") } catch (e) { console.log(e.code, e.message) } }',
      { max_sampling_rounds: 2 },
    );
    expect(rounds.value.stdout).toBe('ok\nok\nSAMPLING_LIMIT max_sampling_rounds (2) reached\n');
    const tokens = await run(
      client,
      'node',
      'try { await llm.think({ messages: [{ role: "user", content: "x" }], maxTokens: 600 }) } catch (e) { console.log(e.code) }',
      { max_sampling_tokens: 500 },
    );
    expect(tokens.value.stdout).toBe('SAMPLING_LIMIT\n');
  }, 60_000);

  it('says "sampling not available" to a client without sampling, and on the 2026 era', async () => {
    for (const options of [{ sampling: false }, { sampling: true, modern: true }]) {
      const { client, asked } = await connect(options);
      const { value } = await run(
        client,
        'node',
        'try { await llm.ask("x") } catch (e) { console.log(e.message) }',
      );
      expect(value.stdout).toContain('sampling not available');
      expect(asked).toEqual([]);
    }
  }, 60_000);

  it('gives llm only with enable_sampling', async () => {
    const { client, asked } = await connect({ sampling: true });
    const { value } = await run(
      client,
      'node',
      'try { await llm.ask("x") } catch (e) { console.log(e.message) }',
      {
        enable_sampling: false,
        allowed_tools: [],
      },
    );
    expect(value.stdout).toContain('sampling not available: the run was started without enable_sampling');
    expect(asked).toEqual([]);
  }, 60_000);

  it('works in sessions: each send asks through its own request, the limits count over the session', async () => {
    const { client, asked } = await connect({ sampling: true });
    const started = await callTool<{ session_id: string }>(client, 'start_session', {
      language: 'python',
      enable_sampling: true,
      max_sampling_rounds: 2,
    });
    const send = (code: string) =>
      callTool<{ stdout: string }>(client, 'send_to_session', { session_id: started.value.session_id, code });
    expect((await send('a = await llm.ask("one")\nprint(a)')).value.stdout).toBe('you said: one\n');
    expect((await send('print(await llm.ask("two"), a)')).value.stdout).toBe('you said: two you said: one\n');
    const third = await send('try:\n    await llm.ask("three")\nexcept Exception as e:\n    print(e.code)');
    expect(third.value.stdout).toBe('SAMPLING_LIMIT\n');
    expect(asked.map((request) => request.messages[0]?.content.text)).toEqual(['one', 'two']);
  }, 60_000);
});
