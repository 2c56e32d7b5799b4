// Spawns the real `codexec serve` (dist/cli.js) and connects the official MCP client over stdio.
import { chmodSync, existsSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { resolve } from 'node:path';
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { expect } from 'vitest';
import { SANDBOX_ENV } from './mode.js';
import { tempDir } from './temp.js';

export { tempDir };

export const CLI = resolve(import.meta.dirname, '../../dist/cli.js');

export type Era = 'legacy' | 'modern';
export const ERAS: readonly Era[] = ['legacy', 'modern'];

export interface TestServer {
  readonly client: Client;
  readonly home: string;
  readonly pid: number;
  /** Everything the server wrote to stderr so far. */
  stderr(): string;
  close(): Promise<void>;
}

export interface StartOptions {
  readonly env?: Record<string, string>;
  readonly era?: Era;
  /** Reuse a CODEXEC_HOME (for restart tests); default: a fresh temp dir removed on close. */
  readonly home?: string;
  /** A program the server runs under: its argv, to which node's is appended (it must exec it). */
  readonly wrapper?: readonly string[];
  /**
   * Declare form elicitation and answer every elicitation request with this, in both eras (2025:
   * a server→client request; 2026: the client SDK fulfils `input_required` through it).
   */
  readonly elicit?: (params: ElicitParams) => Promise<ElicitAnswer> | ElicitAnswer;
  /** More client capabilities to declare (an extension such as MCP Apps). */
  readonly capabilities?: Record<string, unknown>;
}

export interface ElicitParams {
  readonly message: string;
  readonly requestedSchema?: unknown;
}
export interface ElicitAnswer {
  readonly action: 'accept' | 'decline' | 'cancel';
  readonly content?: Record<string, string>;
}

/**
 * Where a test's server runs: its home, not the repository (a server must leave nothing in the
 * directory it was started from); the system's temp dir while that home does not exist yet (a
 * first start makes it, and spawning in a missing directory fails).
 */
export function serverCwd(home: string): string {
  return existsSync(home) ? home : tmpdir();
}

/**
 * A fresh CODEXEC_HOME that others may pass through (0711, no listing), as a host directory's owner
 * must in landlock mode, where codexec lends a login user no search on its directories (a closed
 * home refuses such runs: test/server/host-dirs.test.ts).
 */
export function passableHome(): string {
  const home = tempDir();
  chmodSync(home, 0o711);
  return home;
}

// What a user's MCP client would pass on: basics, plus the proxy and CA settings package
// installs need to reach the registry from this machine.
const PASSED_ON =
  /^(HOME|LANG|USER|TMPDIR|NODE_EXTRA_CA_CERTS|SSL_CERT_FILE|SSL_CERT_DIR|(HTTPS?|NO)_PROXY|(https?|no)_proxy)$/;

/**
 * A clean environment for the server: no inherited secrets. A sandbox mode named by
 * CODEXEC_TEST_SANDBOX_MODE replaces the default (auto), which would fall back to subprocess
 * without a word where that mode does not work; a test's own setting still wins.
 */
export function baseEnv(home: string): Record<string, string> {
  const env: Record<string, string> = {
    CODEXEC_HOME: home,
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    ...(process.env.CODEXEC_TEST_SANDBOX_MODE && SANDBOX_ENV),
  };
  for (const name of Object.keys(process.env).filter((key) => PASSED_ON.test(key))) {
    const value = process.env[name];
    if (value !== undefined) env[name] = value;
  }
  return env;
}

export async function startServer(options: StartOptions = {}): Promise<TestServer> {
  const home = options.home ?? passableHome();
  const [command = process.execPath, ...args] = [...(options.wrapper ?? []), process.execPath, CLI, 'serve'];
  const transport = new StdioClientTransport({
    command,
    args,
    env: { ...baseEnv(home), ...options.env },
    cwd: serverCwd(home),
    stderr: 'pipe',
  });
  let stderr = '';
  transport.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const negotiation = options.era === 'modern' ? { versionNegotiation: { mode: { pin: '2026-07-28' } } } : {};
  const declared = { ...(options.elicit && { elicitation: { form: {} } }), ...options.capabilities };
  const capabilities = Object.keys(declared).length > 0 ? { capabilities: declared } : {};
  const client = new Client({ name: 'codexec-tests', version: '1.0.0' }, {
    ...negotiation,
    ...capabilities,
  } as never);
  const { elicit } = options;
  if (elicit) {
    client.setRequestHandler('elicitation/create', async (request) => {
      const params = request.params as unknown as ElicitParams;
      return (await elicit(params)) as never;
    });
  }
  await client.connect(transport);
  const pid = transport.pid;
  if (pid === null) throw new Error('server did not start');
  return {
    client,
    home,
    pid,
    stderr: () => stderr,
    async close() {
      await client.close();
      if (!options.home) rmSync(home, { recursive: true, force: true });
    },
  };
}

export interface ToolCall<T> {
  readonly isError: boolean;
  readonly value: T;
  readonly text: string;
}

/**
 * What a result's text says, checked against its structured value: the first line is compact JSON
 * whose every field is the value's (src/server/text.ts); the lines after it are the plain text.
 */
export function textFacts(text: string, value: object): Record<string, unknown> {
  const facts = JSON.parse(text.slice(0, text.indexOf('\n'))) as Record<string, unknown>;
  for (const [key, fact] of Object.entries(facts)) {
    expect(value).toHaveProperty(key);
    if (fact === null || typeof fact !== 'object')
      expect(fact).toEqual((value as Record<string, unknown>)[key]);
  }
  return facts;
}

/** Call a tool and return its structured value, and its text. */
export async function callTool<T = Record<string, unknown>>(
  client: Client,
  name: string,
  args: Record<string, unknown>,
  options: Parameters<Client['callTool']>[1] = {},
): Promise<ToolCall<T>> {
  const result = await client.callTool({ name, arguments: args }, options);
  const first = (result.content as Array<{ type: string; text?: string }>)[0];
  const text = first?.type === 'text' ? (first.text ?? '') : '';
  const value = (result.structuredContent ?? JSON.parse(text)) as T;
  return { isError: result.isError === true, value, text };
}
