import { spawn } from 'node:child_process';
import { rmSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { baseEnv, CLI, tempDir } from '../helpers/server.js';

describe('codexec serve stdout', () => {
  it('carries nothing but JSON-RPC, even when code floods its own stdout and stderr', async () => {
    const home = tempDir();
    const child = spawn(process.execPath, [CLI, 'serve'], {
      env: { ...baseEnv(home), LOG_LEVEL: 'debug' },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
    });
    child.stderr.resume();
    const send = (message: object) => child.stdin.write(`${JSON.stringify(message)}\n`);
    send({
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
    });
    send({ jsonrpc: '2.0', method: 'notifications/initialized' });
    send({
      jsonrpc: '2.0',
      id: 2,
      method: 'tools/call',
      params: {
        name: 'execute_code',
        arguments: {
          language: 'python',
          code: 'import sys\nfor i in range(2000): print("noise", i); print("err", i, file=sys.stderr)',
        },
        _meta: { progressToken: 'p1' },
      },
    });
    send({
      jsonrpc: '2.0',
      id: 3,
      method: 'tools/call',
      params: { name: 'execute_code', arguments: { language: 'x' } },
    });
    send({ jsonrpc: '2.0', id: 4, method: 'no/such/method' });
    await new Promise<void>((resolve) => {
      const check = setInterval(() => {
        if (/"id":4/.test(stdout) && /"id":2/.test(stdout)) {
          clearInterval(check);
          resolve();
        }
      }, 20);
    });
    child.stdin.end();
    await new Promise((resolve) => child.once('exit', resolve));
    rmSync(home, { recursive: true, force: true });
    const lines = stdout.split('\n').filter((line) => line !== '');
    expect(lines.length).toBeGreaterThanOrEqual(4);
    for (const line of lines) {
      const message = JSON.parse(line);
      expect(message.jsonrpc).toBe('2.0');
    }
  });
});
