// Spawns the real `codexec serve --http --port 0` and connects the official MCP client over HTTP.
import { type ChildProcess, spawn } from 'node:child_process';
import { rmSync } from 'node:fs';
import { connect } from 'node:net';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import {
  baseEnv,
  CLI,
  type ElicitAnswer,
  type ElicitParams,
  type Era,
  serverCwd,
  tempDir,
} from './server.js';

export interface HttpServer {
  readonly url: string;
  readonly home: string;
  readonly child: ChildProcess;
  stderr(): string;
  /** The exit code once the process ended. */
  readonly exited: Promise<number | null>;
  stop(): Promise<void>;
}

/**
 * Start the server; resolves once it printed its address, rejects if it exits first. `entry`: a
 * script of the tests' own that serves codexec's HTTP stack instead of the CLI (its own flags).
 */
export async function startHttp(
  options: { env?: Record<string, string>; args?: string[]; home?: string; entry?: string } = {},
): Promise<HttpServer> {
  const home = options.home ?? tempDir();
  const command = options.entry ? [options.entry] : [CLI, 'serve', '--http', '--port', '0'];
  const child = spawn(process.execPath, [...command, ...(options.args ?? [])], {
    env: { ...baseEnv(home), ...options.env },
    cwd: serverCwd(home),
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  let listening = false;
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const url = await new Promise<string>((resolve, reject) => {
    child.stderr?.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
      const match = /listening on (http:\/\/\S+)/.exec(stderr);
      if (match?.[1]) {
        listening = true;
        resolve(match[1]);
      }
    });
    void exited.then((code) => {
      // A refused start leaves nothing (after a start, the caller owns the home and removes it).
      if (!listening && !options.home) rmSync(home, { recursive: true, force: true });
      reject(new Error(`server exited ${code}: ${stderr}`));
    });
  });
  return {
    url,
    home,
    child,
    stderr: () => stderr,
    exited,
    async stop() {
      if (child.exitCode === null) child.kill('SIGTERM');
      await exited;
    },
  };
}

/**
 * An SDK client over Streamable HTTP, sending the bearer token when given; with `elicit`, it
 * declares form elicitation and answers every approval form with it; `more` declares more client
 * capabilities (an extension such as MCP Apps).
 */
export async function connectHttp(
  url: string,
  token: string | undefined,
  era: Era,
  elicit?: (params: ElicitParams) => ElicitAnswer | Promise<ElicitAnswer>,
  more?: Record<string, unknown>,
): Promise<Client> {
  const headers: Record<string, string> = token ? { authorization: `Bearer ${token}` } : {};
  const transport = new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } });
  const negotiation = era === 'modern' ? { versionNegotiation: { mode: { pin: '2026-07-28' } } } : {};
  const declared = { ...(elicit && { elicitation: { form: {} } }), ...more };
  const capabilities = Object.keys(declared).length > 0 ? { capabilities: declared } : {};
  const client = new Client({ name: 'codexec-http-tests', version: '1.0.0' }, {
    ...negotiation,
    ...capabilities,
  } as never);
  if (elicit) {
    client.setRequestHandler(
      'elicitation/create',
      async (request) => elicit(request.params as never) as never,
    );
  }
  await client.connect(transport);
  return client;
}

export interface RawResponse {
  readonly status: number;
  /** The status line and the headers, as sent. */
  readonly head: string;
  /** Everything after the head, as sent (chunked or SSE framing included). */
  readonly body: string;
}

/** A JSON-RPC ping as a raw POST to /mcp (HTTP/1.1 head lines without Host: the caller adds its own). */
export const RAW_PING = {
  head: [
    'POST /mcp HTTP/1.1',
    'content-type: application/json',
    'accept: application/json, text/event-stream',
  ],
  body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' }),
};

/**
 * One request written byte for byte over its own connection, for what fetch will not send (a
 * forged, empty or malformed Host). `head` is the request line and headers; the length is added.
 */
export async function rawHttp(url: string, head: readonly string[], body = ''): Promise<RawResponse> {
  const { hostname, port } = new URL(url);
  const socket = connect(Number(port), hostname.replace(/^\[|\]$/g, ''));
  const chunks: Buffer[] = [];
  socket.on('data', (chunk: Buffer) => chunks.push(chunk));
  const text = [...head, `content-length: ${Buffer.byteLength(body)}`, 'connection: close', '', body].join(
    '\r\n',
  );
  socket.write(text);
  await new Promise<void>((resolve, reject) => {
    socket.once('close', () => resolve());
    socket.once('error', reject);
  });
  const all = Buffer.concat(chunks).toString();
  const status = /^HTTP\/1\.[01] (\d{3})/.exec(all)?.[1];
  if (!status) throw new Error(`no HTTP response: ${JSON.stringify(all.slice(0, 200))}`);
  const end = all.indexOf('\r\n\r\n');
  return { status: Number(status), head: all.slice(0, end), body: all.slice(end + 4) };
}
