// The egress allowlist under CODEXEC_APPROVAL=ask in a 2026-07-28 task: a 2026-era call cannot be
// paused mid-run, its task can. A host off the list becomes the task's input request
// (`egress:<host>:<port>`, the host form), answered with tasks/update while the code waits.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fetchCode, type Origin, origin } from '../helpers/origin.js';
import { type RawServer, startRawServer } from '../helpers/raw.js';
import { overStdio, pollFor, pollUntilDone, type Send } from '../helpers/tasks.js';

const decision = (value: string) => ({ action: 'accept', content: { decision: value } });

describe('network allowlist: a 2026-era task asks for a host off the list', () => {
  let server: RawServer;
  let send: Send;
  let listed: Origin;
  let unlisted: Origin;
  /** The unlisted origin's connections before the run. */
  let before = 0;

  beforeAll(async () => {
    [listed, unlisted] = await Promise.all([origin(), origin()]);
    server = startRawServer({
      CODEXEC_APPROVAL: 'ask',
      CODEXEC_NETWORK: 'allowlist',
      CODEXEC_ALLOWED_DOMAINS: `localhost:${listed.port}`,
    });
    await server.discover();
    send = overStdio(server);
  });
  afterAll(async () => {
    await server?.close();
    for (const each of [listed, unlisted]) each?.server.close();
  });

  /** A run approved, then stopped at the host: the task's request for it, answered with `answer`. */
  async function fetchAnswering(answer: string) {
    const created = await send('tools/call', {
      name: 'execute_code',
      arguments: { language: 'python', code: fetchCode(unlisted.port) },
    });
    const taskId = created.result?.taskId as string;
    await send('tasks/update', { taskId, inputResponses: { approval: decision('approve') } });
    const key = `egress:127.0.0.1:${unlisted.port}`;
    const asking = await pollFor(send, taskId, (reply) => reply.result?.status === 'input_required', 30_000);
    expect(Object.keys(asking.result?.inputRequests as object)).toEqual([key]);
    expect(asking.result?.inputRequests).toMatchObject({
      [key]: {
        method: 'elicitation/create',
        params: {
          mode: 'form',
          message: expect.stringContaining(`asks to connect to 127.0.0.1:${unlisted.port}`),
        },
      },
    });
    expect(unlisted.accepted).toBe(before);
    await send('tasks/update', { taskId, inputResponses: { [key]: decision(answer) } });
    const done = await pollUntilDone(send, taskId, 60_000);
    expect(done.result?.status).toBe('completed');
    const result = done.result?.result as { structuredContent: { stdout: string; network_denied?: unknown } };
    return result.structuredContent;
  }
  it('approved: the run reaches the host', async () => {
    before = unlisted.accepted;
    const result = await fetchAnswering('approve');
    expect(JSON.parse(result.stdout.trim())).toEqual([200, 'hello']);
    expect(result.network_denied).toBeUndefined();
    expect(unlisted.accepted).toBe(before + 1);
  }, 90_000);

  it('denied: refused by the proxy, named in network_denied, never contacted', async () => {
    before = unlisted.accepted;
    const result = await fetchAnswering('deny');
    expect(JSON.parse(result.stdout.trim())[0]).toBe(403);
    expect(result.network_denied).toEqual([{ host: '127.0.0.1', port: unlisted.port }]);
    expect(unlisted.accepted).toBe(before);
  }, 90_000);
});
