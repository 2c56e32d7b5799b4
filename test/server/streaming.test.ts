import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { processesWith, sleepMarker } from '../helpers/procs.js';
import { callTool, ERAS, startServer, type TestServer } from '../helpers/server.js';

describe.each(ERAS)('streaming and cancellation (%s era)', (era) => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startServer({ era });
  });
  afterAll(async () => {
    await server.close();
  });

  it('sends output as progress notifications while the code runs', async () => {
    const messages: Array<{ message?: string; at: number }> = [];
    const { value } = await callTool<{ stdout: string }>(
      server.client,
      'execute_code',
      {
        language: 'python',
        code: 'import time\nfor i in range(3):\n    print(f"step {i}")\n    time.sleep(0.3)',
      },
      { onprogress: (p) => messages.push({ message: p.message, at: Date.now() }) },
    );
    const finished = Date.now();
    expect(value.stdout).toBe('step 0\nstep 1\nstep 2\n');
    const streamed = messages.map((m) => m.message).join('');
    expect(streamed).toBe('step 0\nstep 1\nstep 2\n');
    expect(messages.length).toBeGreaterThanOrEqual(2);
    expect(messages[0]?.at).toBeLessThan(finished - 300);
  });

  it('streams a warm run live too, the end mark never in sight', async () => {
    const code = 'import time\nfor i in range(2):\n    print(f"step {i}")\n    time.sleep(1)';
    for (let tries = 0; tries < 20; tries++) {
      const messages: Array<{ message?: string; at: number }> = [];
      const { value } = await callTool<{ stdout: string; warm: boolean }>(
        server.client,
        'execute_code',
        { language: 'python', code },
        { onprogress: (p) => messages.push({ message: p.message, at: Date.now() }) },
      );
      const finished = Date.now();
      if (!value.warm) continue; // the pool was still starting
      expect(value.stdout).toBe('step 0\nstep 1\n');
      // All of the output and nothing else (the very last notification may come after the result,
      // which the client then drops: so a prefix of it).
      const streamed = messages.map((m) => m.message).join('');
      expect(streamed.startsWith('step 0\nstep 1')).toBe(true);
      expect(value.stdout.startsWith(streamed)).toBe(true);
      // "step 0" comes right away, not held back until the next line a second later.
      expect(messages[0]?.message?.startsWith('step 0')).toBe(true);
      expect(messages[0]?.at).toBeLessThan(finished - 1500);
      return;
    }
    throw new Error('no warm run');
  });

  it('sends no progress when the client did not ask for it', async () => {
    let count = 0;
    server.client.setNotificationHandler('notifications/progress', () => {
      count++;
    });
    await callTool(server.client, 'execute_code', { language: 'bash', code: 'echo quiet' });
    expect(count).toBe(0);
  });

  it('kills the run when the client cancels the request', async () => {
    const controller = new AbortController();
    const marker = sleepMarker();
    const call = callTool(
      server.client,
      'execute_code',
      { language: 'bash', code: `echo started\nsleep ${marker}`, timeout_ms: 60_000 },
      { signal: controller.signal },
    );
    await expect.poll(() => processesWith(marker).length, { timeout: 10_000 }).toBe(1);
    controller.abort('user pressed stop');
    await expect(call).rejects.toThrow();
    await expect.poll(() => processesWith(marker), { timeout: 8000 }).toEqual([]);
    // and the server keeps serving
    const { value } = await callTool<{ stdout: string }>(server.client, 'execute_code', {
      language: 'bash',
      code: 'echo ok',
    });
    expect(value.stdout).toBe('ok\n');
  });
});
