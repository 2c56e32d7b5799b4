// The ownership loan walks a writable tree as root (sandbox/namespace/ownership.ts). A command in
// execute_command's shared workspace swaps a directory and a symlink to a root-owned host
// directory without end while other commands start in the same workspace (each lends the tree
// to the sandbox uid, then gives it back): no host file may change owner.
import { chmodSync, mkdirSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { callTool, startServer, type TestServer, tempDir } from '../helpers/server.js';

const isRoot = process.getuid?.() === 0;

function swapLoop(host: string, seconds: number): string {
  const python = [
    'import ctypes, os, time',
    'libc = ctypes.CDLL(None, use_errno=True)',
    "os.makedirs('a/d/e', exist_ok=True)",
    "[open(f'a/d/f{i}', 'w').close() for i in range(20)]",
    `os.symlink(${JSON.stringify(host)}, 'a/l')`,
    `end = time.time() + ${seconds}`,
    'while time.time() < end:',
    "    libc.renameat2(-100, b'a/d', -100, b'a/l', 2)",
  ].join('\n');
  return `cat > swap.py <<'EOF'\n${python}\nEOF\n/usr/bin/python3 swap.py`;
}

describe.skipIf(!isRoot)('lending a workspace while code swaps its directories', () => {
  let server: TestServer;
  const host = tempDir('codexec-host-');
  beforeAll(async () => {
    mkdirSync(join(host, 'e'));
    for (let i = 0; i < 20; i++) writeFileSync(join(host, `f${i}`), 'root only', { mode: 0o600 });
    chmodSync(host, 0o755);
    server = await startServer();
  });
  afterAll(() => server.close());

  it('never hands a host file to the sandbox uid', async () => {
    const swapping = callTool<{ success: boolean; stderr: string }>(server.client, 'execute_command', {
      command: swapLoop(host, 6),
      timeout: 30,
    });
    await new Promise((resolve) => setTimeout(resolve, 500));
    const started = Date.now();
    let runs = 0;
    while (Date.now() - started < 4500) {
      const run = await callTool<{ success: boolean }>(server.client, 'execute_command', { command: 'true' });
      expect(run.value.success).toBe(true);
      runs++;
    }
    const swapped = await swapping;
    expect(swapped.value.stderr).toBe('');
    expect(runs).toBeGreaterThan(5);
    for (const name of ['e', ...Array.from({ length: 20 }, (_, i) => `f${i}`)]) {
      expect({ name, uid: statSync(join(host, name)).uid }).toEqual({ name, uid: 0 });
    }
    expect(statSync(host).uid).toBe(0);
  });
});
