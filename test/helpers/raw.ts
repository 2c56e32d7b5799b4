// A `codexec serve` driven with raw bytes on stdin: for frames no SDK client would send.
import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { once } from 'node:events';
import { rmSync } from 'node:fs';
import { baseEnv, CLI, serverCwd, tempDir } from './server.js';

export interface RawServer {
  readonly proc: ChildProcessWithoutNullStreams;
  readonly home: string;
  /** Every JSON message the server wrote, in order (a non-JSON stdout line fails the test). */
  readonly received: unknown[];
  /** Settles with the exit code (null when killed by a signal) once the server has exited. */
  readonly exited: Promise<number | null>;
  stderr(): string;
  /** Write bytes, waiting for the pipe to drain. */
  write(bytes: string | Buffer): Promise<void>;
  /** The response with this id, waiting up to `ms`. */
  response(id: string | number, ms?: number): Promise<Record<string, unknown>>;
  /** Send a request line and wait for its response. */
  request(
    id: string | number,
    method: string,
    params?: unknown,
    ms?: number,
  ): Promise<Record<string, unknown>>;
  /** Open a 2025-era connection (initialize + initialized). */
  initialize(): Promise<void>;
  /** Open a 2026-07-28 connection (server/discover, the per-request envelope). */
  discover(): Promise<void>;
  close(): Promise<void>;
}

export function startRawServer(env: Record<string, string> = {}): RawServer {
  const home = tempDir();
  const proc = spawn(process.execPath, [CLI, 'serve'], {
    env: { ...baseEnv(home), ...env },
    cwd: serverCwd(home),
  });
  const received: unknown[] = [];
  const waiters = new Set<() => void>();
  let stdout = '';
  let stderr = '';
  proc.stdout.on('data', (chunk: Buffer) => {
    stdout += chunk.toString();
    let end = stdout.indexOf('\n');
    while (end !== -1) {
      const line = stdout.slice(0, end);
      stdout = stdout.slice(end + 1);
      try {
        received.push(JSON.parse(line));
      } catch {
        received.push({ NOT_JSON: line });
      }
      end = stdout.indexOf('\n');
    }
    for (const wake of waiters) wake();
  });
  proc.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const exited = new Promise<number | null>((resolve) => proc.once('exit', (code) => resolve(code)));
  proc.stdin.on('error', () => {}); // the server may be gone; the test says so, not an EPIPE

  const gone = exited.then(() => Promise.reject(new Error(`server exited; stderr:\n${stderr.slice(-2000)}`)));
  gone.catch(() => {}); // raced below; unobserved until then
  const write = async (bytes: string | Buffer) => {
    if (proc.exitCode !== null || proc.signalCode !== null) await gone;
    if (!proc.stdin.write(bytes)) await Promise.race([once(proc.stdin, 'drain'), gone]);
  };
  const find = (id: string | number) =>
    received.find((m) => (m as { id?: unknown }).id === id && !('method' in (m as object))) as
      | Record<string, unknown>
      | undefined;
  const response = (id: string | number, ms = 30_000) =>
    new Promise<Record<string, unknown>>((resolve, reject) => {
      const check = () => {
        const found = find(id);
        if (!found) return false;
        done();
        resolve(found);
        return true;
      };
      const timer = setTimeout(() => {
        done();
        reject(
          new Error(`no response to ${JSON.stringify(id)} within ${ms} ms; stderr:\n${stderr.slice(-2000)}`),
        );
      }, ms);
      const done = () => {
        clearTimeout(timer);
        waiters.delete(wake);
      };
      const wake = () => void check();
      if (!check()) waiters.add(wake);
    });
  const request = async (id: string | number, method: string, params?: unknown, ms?: number) => {
    await write(
      `${JSON.stringify({ jsonrpc: '2.0', id, method, ...(params !== undefined && { params }) })}\n`,
    );
    return response(id, ms);
  };
  return {
    proc,
    home,
    received,
    exited,
    stderr: () => stderr,
    write,
    response,
    request,
    async initialize() {
      await request('init', 'initialize', {
        protocolVersion: '2025-06-18',
        capabilities: {},
        clientInfo: { name: 'raw', version: '1' },
      });
      await write('{"jsonrpc":"2.0","method":"notifications/initialized"}\n');
    },
    async discover() {
      const reply = await request('discover', 'server/discover', {
        _meta: {
          'io.modelcontextprotocol/protocolVersion': '2026-07-28',
          'io.modelcontextprotocol/clientInfo': { name: 'raw', version: '1' },
          'io.modelcontextprotocol/clientCapabilities': {},
        },
      });
      if (!('result' in reply)) throw new Error(`server/discover failed: ${JSON.stringify(reply)}`);
    },
    async close() {
      proc.stdin.end();
      // A deadline, generous for a busy machine: a server that has not exited by then is killed.
      const timer = setTimeout(() => proc.kill('SIGKILL'), 30_000);
      await exited;
      clearTimeout(timer);
      rmSync(home, { recursive: true, force: true });
    },
  };
}
