// Spawns the real `codexec serve --http --port 0` and connects the official MCP client over HTTP.
import { type ChildProcess, spawn } from 'node:child_process';
import { rmSync } from 'node:fs';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { baseEnv, CLI, type ElicitAnswer, type ElicitParams, type Era, tempDir } from './server.js';

export interface HttpServer {
  readonly url: string;
  readonly home: string;
  readonly child: ChildProcess;
  stderr(): string;
  /** The exit code once the process ended. */
  readonly exited: Promise<number | null>;
  stop(): Promise<void>;
}

/** Start the server; resolves once it printed its address, rejects if it exits first. */
export async function startHttp(
  options: { env?: Record<string, string>; args?: string[]; home?: string } = {},
): Promise<HttpServer> {
  const home = options.home ?? tempDir();
  const child = spawn(process.execPath, [CLI, 'serve', '--http', '--port', '0', ...(options.args ?? [])], {
    env: { ...baseEnv(home), ...options.env },
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
 * declares form elicitation and answers every approval form with it.
 */
export async function connectHttp(
  url: string,
  token: string | undefined,
  era: Era,
  elicit?: (params: ElicitParams) => ElicitAnswer,
): Promise<Client> {
  const headers: Record<string, string> = token ? { authorization: `Bearer ${token}` } : {};
  const transport = new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } });
  const negotiation = era === 'modern' ? { versionNegotiation: { mode: { pin: '2026-07-28' } } } : {};
  const capabilities = elicit ? { capabilities: { elicitation: { form: {} } } } : {};
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
