// Debian's HAProxy on a loopback port, configured from the shipped deploy/haproxy.cfg: only the
// frontend's `bind` line and the backend's `server` lines are replaced, so the file operators
// deploy is the file the tests run.
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { freePort } from './postgres.js';

export const HAPROXY = '/usr/sbin/haproxy';
export const SHIPPED_CONFIG = resolve(import.meta.dirname, '../../deploy/haproxy.cfg');

export interface TestHaproxy {
  /** http://127.0.0.1:<port>/mcp */
  readonly url: string;
  readonly port: number;
  /** Its log lines so far (stdout: one line per request, `option httplog`). */
  log(): string;
  stop(): Promise<void>;
}

/**
 * The shipped config with `bind` on 127.0.0.1:<port> and one `server` line per backend
 * (`replica1`, `replica2`, …, in the given order), as data: testable without spawning.
 */
export function renderConfig(shipped: string, port: number, backends: readonly string[]): string {
  const lines = shipped.split('\n');
  const binds = lines.filter((line) => /^\s*bind\s/.test(line));
  const firstServer = lines.findIndex((line) => /^\s*server\s/.test(line));
  if (binds.length !== 1 || firstServer === -1)
    throw new Error('deploy/haproxy.cfg: expected one `bind` line and `server` lines');
  const servers = backends.map((backend, i) => `    server replica${i + 1} ${backend}`);
  const out: string[] = [];
  lines.forEach((line, i) => {
    if (/^\s*bind\s/.test(line)) out.push(`    bind 127.0.0.1:${port}`);
    else if (i === firstServer) out.push(...servers);
    else if (!/^\s*server\s/.test(line)) out.push(line);
  });
  return out.join('\n');
}

/** `haproxy -c -f <file>`: throws with HAProxy's own words when the file is not valid. */
export function checkConfig(file: string): string {
  return execFileSync(HAPROXY, ['-c', '-f', file], { encoding: 'utf8', stdio: 'pipe' });
}

/**
 * Start HAProxy over `backends` (host:port each), on `port` (default: a free one); resolves once
 * it accepts connections.
 */
export async function startHaproxy(backends: readonly string[], given?: number): Promise<TestHaproxy> {
  if (!existsSync(HAPROXY)) throw new Error('HAProxy is not installed (apt-get install haproxy)');
  const dir = mkdtempSync(join(tmpdir(), 'codexec-haproxy-'));
  const port = given ?? (await freePort());
  const file = join(dir, 'haproxy.cfg');
  writeFileSync(file, renderConfig(readFileSync(SHIPPED_CONFIG, 'utf8'), port, backends));
  // -db: stay in the foreground, no daemon; the test owns the process.
  const child: ChildProcess = spawn(HAPROXY, ['-db', '-f', file], { stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  const keep = (chunk: Buffer) => {
    output = (output + chunk.toString()).slice(-200_000);
  };
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, 5000))]);
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    }
    rmSync(dir, { recursive: true, force: true });
  };
  const deadline = Date.now() + 10_000;
  while (!(await accepts(port))) {
    if (child.exitCode !== null || Date.now() > deadline) {
      await stop();
      throw new Error(`haproxy did not start: ${output}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return { url: `http://127.0.0.1:${port}/mcp`, port, log: () => output, stop };
}

function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}
