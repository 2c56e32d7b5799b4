// An idle stdio server collects its garbage once its calls are over, and not while they go on.
import { describe, expect, it } from 'vitest';
import { IDLE_COLLECT_MS } from '../../src/server/idle-heap.js';
import { eventually } from '../helpers/eventually.js';
import { callTool, startServer } from '../helpers/server.js';

const COLLECTED = /idle: heap collected, ([\d.]+) → ([\d.]+) MB used/g;

describe('idle heap', () => {
  it('after a burst of calls: one full collection, with less heap after it', async () => {
    const server = await startServer({ env: { LOG_LEVEL: 'debug' } });
    const collections = () => [...server.stderr().matchAll(COLLECTED)];
    try {
      // Calls closer together than the idle time: no collection between them.
      const started = Date.now();
      for (let i = 0; i < 5; i++) {
        const run = await callTool(server.client, 'execute_code', { language: 'python', code: 'print(1)' });
        expect(run.value.stdout).toBe('1\n');
      }
      const busyMs = Date.now() - started;
      if (busyMs < IDLE_COLLECT_MS) expect(collections()).toEqual([]);
      expect(await eventually(() => collections().length > 0)).toBe(true);
      const [[, before, after] = []] = collections();
      expect(Number(after)).toBeLessThan(Number(before));
      // Once, until the next message.
      await new Promise((resolve) => setTimeout(resolve, 2 * IDLE_COLLECT_MS + 500));
      expect(collections()).toHaveLength(1);
      await callTool(server.client, 'health', {});
      expect(await eventually(() => collections().length === 2)).toBe(true);
    } finally {
      await server.close();
    }
  }, 60_000);
});
