// No container outlives its server: closed, its stdin closed mid-run, or killed with SIGKILL; and a
// server that starts removes what dead servers left.
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { dirname } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { eventually } from '../../helpers/eventually.js';
import { startRawServer } from '../../helpers/raw.js';
import { callTool, startServer, tempDir } from '../../helpers/server.js';
import {
  containersOf,
  DOCKER_MODE,
  engine,
  ensureImage,
  IMAGE,
  ociContainersOf,
  ociRuntimeOf,
  sessionContainersOf,
} from './engine.js';

const DOCKER = DOCKER_MODE;
const call = (name: string, args: Record<string, unknown>) => ({ name, arguments: args });

beforeAll(() => ensureImage(), 600_000);

describe('container lifetimes', () => {
  it('removes every container (runs, warm pool, sessions) when the server closes', async () => {
    const server = await startServer({ env: DOCKER });
    const { pid } = server;
    await callTool(server.client, 'execute_code', { language: 'python', code: 'print(1)' });
    await callTool(server.client, 'start_session', { language: 'bash' });
    expect(sessionContainersOf(pid)).toHaveLength(1);
    await server.close();
    expect(await eventually(() => containersOf(pid).length === 0)).toBe(true);
  });

  it('stops a run and a session when stdin closes, exits, and leaves no container', async () => {
    const raw = startRawServer(DOCKER);
    try {
      await raw.initialize();
      const started = await raw.request('start', 'tools/call', call('start_session', { language: 'python' }));
      const id = (started.result as { structuredContent?: { session_id?: string } }).structuredContent
        ?.session_id;
      expect(id, JSON.stringify(started)).toMatch(/^sess_/);
      for (const [i, params] of [
        call('execute_code', { language: 'bash', code: 'sleep 120' }),
        call('send_to_session', { session_id: id, code: 'import time\ntime.sleep(120)' }),
      ].entries()) {
        await raw.write(
          `${JSON.stringify({ jsonrpc: '2.0', id: `run-${i}`, method: 'tools/call', params })}\n`,
        );
      }
      const pid = raw.proc.pid ?? -1;
      await expect.poll(() => containersOf(pid).length, { timeout: 20_000 }).toBeGreaterThanOrEqual(2);
      const closedAt = Date.now();
      raw.proc.stdin.end();
      expect(await raw.exited).toBe(0);
      expect(Date.now() - closedAt).toBeLessThan(15_000);
      expect(await eventually(() => containersOf(pid).length === 0)).toBe(true);
    } finally {
      await raw.close();
    }
  });

  it('removes the containers of a server killed with SIGKILL', async () => {
    const home = tempDir();
    const server = await startServer({ env: DOCKER, home });
    const { pid } = server;
    await callTool(server.client, 'start_session', { language: 'python' });
    await callTool(server.client, 'execute_code', { language: 'node', code: 'console.log(1)' });
    expect(containersOf(pid).length).toBeGreaterThan(0);
    process.kill(pid, 'SIGKILL');
    expect(await eventually(() => containersOf(pid).length === 0, 20_000)).toBe(true);
    await server.close().catch(() => {});
  });

  it('removes, on its first run, what a dead server left (its reaper gone too)', async () => {
    // A container labelled as a dead server's: pid 1 of another boot (its start time cannot match).
    const name = `codexec-test-dead-${process.pid}`;
    engine(
      'create',
      '--name',
      name,
      '--label',
      'codexec=1',
      '--label',
      'codexec.server=deadbeef',
      '--label',
      `codexec.host=${hostname()}`,
      '--label',
      'codexec.pid=1',
      '--label',
      'codexec.started=0',
      IMAGE,
      'true',
    );
    const server = await startServer({ env: DOCKER });
    try {
      await callTool(server.client, 'execute_code', { language: 'bash', code: 'echo hi' });
      const left = engine('ps', '--all', '--filter', `name=${name}`, '--format', '{{.Names}}').trim();
      expect(left, server.stderr()).toBe('');
    } finally {
      await server.close();
      try {
        engine('rm', '--force', name);
      } catch {
        // removed by the server, as it should be
      }
    }
  });

  it('removes, at its start, the one-shot containers and state a dead server left with its OCI runtime', async () => {
    const home = tempDir();
    const dead = await startServer({ env: DOCKER, home });
    const running = callTool(dead.client, 'execute_code', { language: 'bash', code: 'sleep 300' });
    await expect.poll(() => ociContainersOf(dead.pid).length, { timeout: 20_000 }).toBeGreaterThan(0);
    const runtime = ociRuntimeOf(dead.pid) ?? [];
    const root = runtime[runtime.indexOf('--root') + 1] ?? '';
    const left = ociContainersOf(dead.pid);
    // Its watchers first (they would remove the containers), then the server: nothing is cleaned up.
    for (const pid of processesNaming(root)) process.kill(pid, 'SIGKILL');
    process.kill(dead.pid, 'SIGKILL');
    await dead.close().catch(() => {});
    running.catch(() => {});
    const [binary = '', ...options] = runtime;
    const listed = () => execFileSync(binary, [...options, 'list', '--quiet'], { encoding: 'utf8' });
    expect(listed()).toContain(left[0]);
    const next = await startServer({ env: DOCKER, home });
    try {
      await callTool(next.client, 'execute_code', { language: 'bash', code: 'echo hi' });
      expect(existsSync(dirname(root)), next.stderr()).toBe(false);
    } finally {
      await next.close();
    }
  });
});

/** Pids of the processes whose command line names `text` (a server's runtime state directory). */
function processesNaming(text: string): number[] {
  return readdirSync('/proc')
    .filter((entry) => /^\d+$/.test(entry))
    .filter((entry) => {
      try {
        return (
          readFileSync(`/proc/${entry}/cmdline`, 'utf8').includes(text) &&
          readFileSync(`/proc/${entry}/cmdline`, 'utf8').includes('watcher')
        );
      } catch {
        return false;
      }
    })
    .map(Number);
}
