// Warm runs after the server sat idle: the helpers that wait for runs (zygotes, the node template,
// pre-forked launchers) must serve one after 10 s as well as at once. The node template once hung
// every fork made after V8's memory reducer fell due (8 s): each such run ended at its timeout.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ExecutionResult } from '../../src/engine/index.js';
import { SANDBOX_ENV } from '../helpers/mode.js';
import { callTool, startServer, type TestServer } from '../helpers/server.js';

const CODE: Record<string, string> = { python: 'print(1)', node: 'console.log(1)', bash: 'echo 1' };

describe('warm runs after an idle spell', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startServer({ env: { ...SANDBOX_ENV } });
  });
  afterAll(async () => {
    await server.close();
  });

  it('end at once after 10 s without a run, in every language, two at a time', async () => {
    const run = async (language: string) =>
      (
        await callTool<ExecutionResult>(server.client, 'execute_code', {
          language,
          code: CODE[language],
          timeout_ms: 8000,
        })
      ).value;
    for (const language of Object.keys(CODE)) await run(language);
    await new Promise((resolve) => setTimeout(resolve, 10_000));
    const languages = [...Object.keys(CODE), ...Object.keys(CODE)];
    const results = await Promise.all(languages.map(run));
    for (const result of results)
      expect(result).toMatchObject({ stdout: '1\n', exit_code: 0, timed_out: false });
  }, 60_000);
});
