// Seeded fuzzing of a live server: malformed frames on raw stdio, and hostile tool
// arguments through the SDK client. After every burst a normal request must be answered; every
// request whose id is readable must get an answer; at the end the server is alive and serving.
// Replay a run with FUZZ_SEED=<seed printed below>; FUZZ_MS sets the time budget (default 20 s).
import { afterAll, describe, expect, it } from 'vitest';
import { Fuzz, nested, prng } from '../helpers/fuzz.js';
import { startRawServer } from '../helpers/raw.js';
import { callTool, startServer } from '../helpers/server.js';

const SEED = Number(process.env.FUZZ_SEED ?? Math.floor(Math.random() * 2 ** 31));
const BUDGET_MS = Number(process.env.FUZZ_MS ?? 20_000);
const LIMIT = 256 * 1024; // the raw server's message limit, so oversize frames stay cheap
console.log(
  `fuzz seed ${SEED} (replay: FUZZ_SEED=${SEED}); raw frames ${SEED % 2 === 0 ? '2025' : '2026'} era`,
);
afterAll(() => console.log(`fuzz seed was ${SEED}`));

interface RawFrame {
  readonly bytes: Buffer;
  /** Ids of requests in this frame that must be answered. */
  readonly expect: readonly string[];
}

const METHODS = [
  'ping',
  'tools/list',
  'nope/nope',
  'resources/list',
  'prompts/list',
  'tools/call',
  'initialize',
];

function rawFrame(f: Fuzz, id: string): RawFrame {
  const line = (value: unknown, expect: string[] = []) => ({
    bytes: Buffer.from(
      `${typeof value === 'string' ? value : JSON.stringify(value)}${f.chance(0.2) ? '\r\n' : '\n'}`,
    ),
    expect,
  });
  const request = (): Record<string, unknown> => {
    const method = f.pick(METHODS);
    const params =
      method === 'tools/call'
        ? { name: f.pick(['list_sessions', 'get_script', 'execute_code', f.text(10)]), arguments: f.value() }
        : f.chance(0.5)
          ? { x: f.value() }
          : undefined;
    return { jsonrpc: '2.0', id, method, ...(params && { params }) };
  };
  switch (f.int(13)) {
    case 0:
      return { bytes: Buffer.concat([f.bytes(), Buffer.from('\n')]), expect: [] };
    case 1:
      return line(request(), [id]);
    case 2: {
      const broken = request();
      const how = f.int(5);
      if (how === 0) broken.jsonrpc = f.pick(['1.0', 2, null, undefined]);
      if (how === 1) broken.method = f.pick([5, null, {}, ['ping']]);
      if (how === 2) broken[f.pick(['extra', 'Method', '__proto__x'])] = f.value();
      if (how === 3) broken.params = f.pick(['not-an-object', 5, [], null, true]);
      if (how === 4) broken.params = { _meta: f.pick([5, 'x', { progressToken: {} }]) };
      return line(broken, [id]);
    }
    case 3:
      return line({ ...request(), id: f.pick([null, {}, [], true, 1.5, -0]) });
    case 4: {
      const text = JSON.stringify(request());
      return line(text.slice(0, f.int(text.length)));
    }
    case 5: {
      const depth = f.int(100_000) + 1;
      return line(
        `{"jsonrpc":"2.0","id":"${id}","method":"ping","params":{"d":${'['.repeat(depth)}${']'.repeat(depth)}}}`,
        [id],
      );
    }
    case 6:
      return line(f.pick(['1', '"s"', 'null', 'true', '[]', '{}', '[1,2]', '   ', '', '\u0000']));
    case 7: {
      const ids = Array.from({ length: f.int(3) + 1 }, (_, i) => `${id}.${i}`);
      return line(
        ids.map((each) => ({ jsonrpc: '2.0', id: each, method: 'ping' })),
        ids,
      );
    }
    case 8:
      return line({
        jsonrpc: '2.0',
        method: f.pick(['notifications/progress', 'notifications/x', f.text(8)]),
        params: f.value(),
      });
    case 9:
      return line({
        jsonrpc: '2.0',
        id: f.pick([f.int(1000), `r${f.int(9)}`]),
        ...(f.chance(0.5) ? { result: f.value() } : { error: f.value() }),
      });
    case 10: {
      const filler = 'x'.repeat(LIMIT + f.int(2 * LIMIT));
      const front = f.chance(0.5);
      const body = front
        ? `{"jsonrpc":"2.0","id":"${id}","method":"tools/call","params":{"name":"execute_code","arguments":{"code":"${filler}"}}}`
        : `{"method":"tools/call","params":{"arguments":{"code":"${filler}"}},"jsonrpc":"2.0","id":"${id}"}`;
      return line(body, [id]);
    }
    case 11:
      return line(
        { jsonrpc: '2.0', id, method: f.pick(METHODS), params: { s: f.text(200), [f.text(5)]: f.text(5) } },
        [id],
      );
    default:
      return line(`{"jsonrpc":"2.0","id":"${id}","method":"ping","params":{"s":"\\ud800\\u0000\\udfff"}}`, [
        id,
      ]);
  }
}

describe('fuzz', () => {
  it('raw frames: every burst is followed by a served request, every readable id is answered', async () => {
    const f = new Fuzz(prng(SEED));
    const raw = startRawServer({ CODEXEC_MAX_MESSAGE_BYTES: String(LIMIT) });
    const deadline = Date.now() + BUDGET_MS * 0.45;
    const expected: string[] = [];
    let frames = 0;
    try {
      // The era alternates with the seed; the opening is the only place the eras' framing differs.
      await (SEED % 2 === 0 ? raw.initialize() : raw.discover());
      for (let burst = 0; Date.now() < deadline; burst++) {
        const parts: Buffer[] = [];
        for (let i = f.int(12) + 1; i > 0; i--) {
          const frame = rawFrame(f, `fz-${burst}-${i}`);
          parts.push(frame.bytes);
          expected.push(...frame.expect);
          frames++;
        }
        // Written in random pieces, so frames straddle chunk boundaries.
        const all = Buffer.concat(parts);
        for (let at = 0; at < all.length; ) {
          const size = f.int(4096) + 1;
          await raw.write(all.subarray(at, at + size));
          at += size;
        }
        const probe = await raw.request(`probe-${burst}`, 'ping', undefined, 30_000);
        expect(probe, `seed ${SEED} burst ${burst}`).toMatchObject({ result: {} });
      }
      for (const id of expected) {
        const reply = await raw.response(id, 60_000).catch((error: Error) => {
          throw new Error(`seed ${SEED}: no answer to ${id}: ${error.message}`);
        });
        expect(reply.jsonrpc).toBe('2.0');
      }
      const junk = raw.received.filter((m) => 'NOT_JSON' in (m as object));
      expect(junk, `seed ${SEED}: stdout must stay JSON-RPC`).toEqual([]);
      console.log(`raw fuzz: ${frames} frames, ${expected.length} answered by id`);
      const tools = await raw.request('last', 'tools/list');
      expect(JSON.stringify(tools)).toContain('execute_code');
    } finally {
      await raw.close();
    }
  }, 180_000);

  it('hostile tool arguments: each call is answered, and the server serves on', async () => {
    const f = new Fuzz(prng(SEED ^ 0x5bd1e995));
    const server = await startServer({
      era: SEED % 2 === 0 ? 'modern' : 'legacy', // the other era from the raw half's
      env: {
        CODEXEC_MAX_TIMEOUT_MS: '3000',
        CODEXEC_DEFAULT_TIMEOUT_MS: '3000',
        CODEXEC_INSTALL_TIMEOUT_MS: '1000',
        CODEXEC_MAX_SESSIONS: '2',
      },
    });
    const deadline = Date.now() + BUDGET_MS * 0.45;
    let calls = 0;
    try {
      const { tools } = await server.client.listTools();
      const argsFor = (schema: { properties?: Record<string, { type?: unknown; enum?: unknown[] }> }) => {
        const args: Record<string, unknown> = {};
        for (const [key, prop] of Object.entries(schema.properties ?? {})) {
          if (f.chance(0.3)) continue;
          if (f.chance(0.5)) args[key] = f.value();
          else if (prop.enum) args[key] = f.pick(prop.enum);
          else if (prop.type === 'string')
            args[key] = f.chance(0.05) ? 'y'.repeat(f.int(2_000_000)) : f.text(200);
          else if (prop.type === 'integer' || prop.type === 'number')
            args[key] = f.pick([0, -5, 1e12, 250, 3.7]);
          else args[key] = f.value();
        }
        if (f.chance(0.1)) args[f.text(6)] = nested(f.int(900) + 1);
        return args;
      };
      for (let burst = 0; Date.now() < deadline; burst++) {
        const batch = Array.from({ length: f.int(6) + 1 }, () => {
          const tool = f.chance(0.1) ? undefined : f.pick(tools);
          const name = tool?.name ?? f.pick(['nope', '', f.text(12), 'execute_code\u0000']);
          const args = tool ? argsFor(tool.inputSchema as never) : { a: f.value() };
          calls++;
          return server.client.callTool({ name, arguments: args }, { timeout: 60_000 }).then(
            (result) => expect(result.content, `seed ${SEED}: ${name}`).toBeDefined(),
            (error: { code?: unknown; message?: string }) =>
              // A JSON-RPC error is an answer; a closed connection or a timeout is not.
              expect(
                typeof error.code === 'number' && error.code < 0,
                `seed ${SEED}: ${name}: ${error.message}`,
              ).toBe(true),
          );
        });
        await Promise.all(batch);
        const { value } = await callTool<{ stdout: string }>(server.client, 'execute_code', {
          language: 'bash',
          code: `echo ok${burst}`,
        });
        expect(value.stdout, `seed ${SEED} burst ${burst}`).toBe(`ok${burst}\n`);
      }
      process.kill(server.pid, 0); // throws if the server is gone
      expect((await server.client.listTools()).tools.length).toBe(tools.length);
      console.log(`tool fuzz: ${calls} calls`);
    } finally {
      await server.close();
    }
  }, 180_000);
});
