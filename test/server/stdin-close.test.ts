// When the client goes away (stdin closed), the server stops its runs and sessions and exits
// within a few seconds, leaving no process behind.
import { describe, expect, it } from 'vitest';
import { processesUnder, processesWith, sleepMarker } from '../helpers/procs.js';
import { startRawServer } from '../helpers/raw.js';

const call = (name: string, args: Record<string, unknown>) => ({ name, arguments: args });

describe('stdin closed', () => {
  it('stops in-flight runs and sessions, exits 0 within seconds, and leaves no process', async () => {
    const marker = sleepMarker();
    const raw = startRawServer();
    try {
      await raw.initialize();
      const sessions: string[] = [];
      for (const language of ['python', 'bash']) {
        const started = await raw.request(
          `start-${language}`,
          'tools/call',
          call('start_session', { language }),
        );
        const id = (started.result as { structuredContent?: { session_id?: string } }).structuredContent
          ?.session_id;
        expect(id, JSON.stringify(started)).toMatch(/^sess_/);
        sessions.push(id as string);
      }
      // Three runs in flight, each sleeping on the marker: one-shot, a Python send, a Bash send;
      // and a package install (PyPI is unreachable here: pip waits on the network).
      const sends = [
        call('execute_code', { language: 'bash', code: `sleep ${marker}` }),
        call('send_to_session', { session_id: sessions[0], code: `import os\nos.system("sleep ${marker}")` }),
        call('send_to_session', { session_id: sessions[1], code: `sleep ${marker}` }),
        call('install_package', { package: 'codexec-no-such-package', language: 'python' }),
      ];
      for (const [i, params] of sends.entries()) {
        await raw.write(
          `${JSON.stringify({ jsonrpc: '2.0', id: `run-${i}`, method: 'tools/call', params })}\n`,
        );
      }
      await expect.poll(() => processesWith(marker).length, { timeout: 20_000 }).toBe(3);
      expect(processesUnder(raw.home).length).toBeGreaterThan(0);

      const closedAt = Date.now();
      raw.proc.stdin.end();
      const code = await raw.exited;
      const took = Date.now() - closedAt;
      console.log(
        `stdin closed with 3 runs, an install and 2 sessions live: exited ${code} after ${took} ms`,
      );
      expect(code).toBe(0);
      expect(took).toBeLessThan(10_000);
      await expect.poll(() => processesWith(marker), { timeout: 5000 }).toEqual([]);
      await expect.poll(() => processesUnder(raw.home), { timeout: 5000 }).toEqual([]);
    } finally {
      await raw.close();
    }
  });

  it('exits when stdin closes in the middle of a frame', async () => {
    const raw = startRawServer();
    try {
      await raw.initialize();
      await raw.write(
        '{"jsonrpc":"2.0","id":"cut","method":"tools/call","params":{"name":"execute_code","argu',
      );
      raw.proc.stdin.end();
      expect(await raw.exited).toBe(0);
      expect(raw.received.some((m) => (m as { id?: unknown }).id === 'cut')).toBe(false);
    } finally {
      await raw.close();
    }
  });
});
