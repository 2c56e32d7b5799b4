import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { callTool, ERAS, startServer, type TestServer } from '../helpers/server.js';

describe.each(ERAS)('execute_code smoke (%s era)', (era) => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startServer({ era });
  });
  afterAll(() => server.close());

  it('runs python', async () => {
    const { isError, value } = await callTool(server.client, 'execute_code', { language: 'python', code: 'print(1+1)' });
    expect(isError).toBe(false);
    expect(value).toMatchObject({ success: true, stdout: '2\n', exit_code: 0 });
  });
});
