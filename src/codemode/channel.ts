import { randomBytes, timingSafeEqual } from 'node:crypto';
import { chmodSync, rmSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import { join } from 'node:path';
import { z } from 'zod';
import { BridgeError, type BridgeRun } from '../bridge/index.js';
import { lazily } from '../util/index.js';
import type { Sampler } from './sampler.js';

// The way from sandboxed code to the bridge: a Unix socket in the run's own workspace (the one
// directory of the host that sandbox sees, and no other run does), a random token per run, and
// line-delimited JSON requests, each checked here before anything reaches the bridge. The network
// stays off: a Unix socket is a file, not a network.

/** The socket's name in the workspace (left out of artifact lists: it is gone before they are made). */
export const SOCKET_NAME = '.codexec-bridge.sock';
const MAX_LINE_BYTES = 1024 * 1024;
/**
 * Requests one connection may have unanswered; past it the socket is read no more until some are
 * answered, so code that fires calls without waiting (each refused past the rate limit only after
 * a pause) blocks in its own writes instead of piling them up here.
 */
const MAX_IN_FLIGHT = 64;

/** A request's shape, made on the first request: an idle server holds no code mode schema. */
const request = lazily(() =>
  z.discriminatedUnion('method', [
    z.object({
      id: z.number().int(),
      method: z.literal('call'),
      params: z.object({
        name: z.string().min(1).max(512),
        args: z.record(z.string(), z.unknown()).default({}),
      }),
    }),
    z.object({
      id: z.number().int(),
      method: z.literal('discover'),
      params: z.object({ search: z.string().max(1000).optional() }).default({}),
    }),
    z.object({
      id: z.number().int(),
      method: z.literal('search'),
      params: z.object({ query: z.string().max(1000), limit: z.number().int().min(1).max(100).optional() }),
    }),
    z.object({
      id: z.number().int(),
      method: z.literal('schema'),
      params: z.object({ name: z.string().min(1).max(512) }),
    }),
    z.object({
      id: z.number().int(),
      method: z.literal('sample'),
      params: z.object({
        messages: z
          .array(z.object({ role: z.enum(['user', 'assistant']), content: z.string().max(200_000) }))
          .min(1)
          .max(100),
        systemPrompt: z.string().max(200_000).optional(),
        maxTokens: z.number().int().min(1).max(1_000_000).optional(),
      }),
    }),
  ]),
);

export interface Channel {
  /** The socket's path (the same inside the sandbox: the workspace is bound where it is). */
  readonly socketPath: string;
  readonly token: string;
  /**
   * The run it serves, when it was opened ahead of it (a warm process's: its socket is bound
   * while the process waits, off the run's path). Until then requests are refused.
   */
  attach(run: BridgeRun, sampler?: Sampler): void;
  /** A session's sends each bring their own sampler (sampling belongs to one request). */
  setSampler(sampler: Sampler | undefined): void;
  close(): Promise<void>;
}

/**
 * Open the channel of one run (or session) in its workspace `dir`; `sampler` serves llm.*. No
 * `run` yet: the channel of a warm process, attached to its run when one takes it.
 */
export async function openChannel(dir: string, run?: BridgeRun, sampler?: Sampler): Promise<Channel> {
  const socketPath = join(dir, SOCKET_NAME);
  const token = randomBytes(32).toString('hex');
  const expected = Buffer.from(token);
  const sockets = new Set<Socket>();
  const current: Served = { run, sampler };
  const server: Server = createServer((socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
    serve(socket, expected, current);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(socketPath, resolve);
  });
  // The sandbox's uid (not the server's) connects: the token, not the mode, keeps others out.
  chmodSync(socketPath, 0o666);
  let closed: Promise<void> | undefined;
  return {
    socketPath,
    token,
    attach(next, nextSampler) {
      current.run = next;
      current.sampler = nextSampler;
    },
    setSampler(next) {
      current.sampler = next;
    },
    async close() {
      if (closed) return closed;
      closed = new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }).then(() => rmSync(socketPath, { force: true }));
      return closed;
    },
  };
}

/** What a channel serves now (a session's sampler changes from send to send). */
interface Served {
  run: BridgeRun | undefined;
  sampler: Sampler | undefined;
}

function serve(socket: Socket, expected: Buffer, current: Served): void {
  let buffered = '';
  let authenticated = false;
  let inFlight = 0;
  socket.setEncoding('utf8');
  const reply = (message: object) => {
    if (!socket.destroyed) socket.write(`${JSON.stringify(message)}\n`);
  };
  socket.on('data', (chunk: string) => {
    buffered += chunk;
    if (Buffer.byteLength(buffered) > MAX_LINE_BYTES && !buffered.includes('\n')) {
      reply({
        id: null,
        error: { code: 'INVALID_REQUEST', message: `a request over ${MAX_LINE_BYTES} bytes` },
      });
      socket.destroy();
      return;
    }
    let newline = buffered.indexOf('\n');
    while (newline !== -1) {
      const line = buffered.slice(0, newline);
      buffered = buffered.slice(newline + 1);
      newline = buffered.indexOf('\n');
      if (!authenticated) {
        const given = Buffer.from(tokenOf(line));
        if (given.length !== expected.length || !timingSafeEqual(given, expected)) {
          socket.destroy(); // no answer to a caller without the run's token
          return;
        }
        authenticated = true;
        continue;
      }
      inFlight += 1;
      if (inFlight === MAX_IN_FLIGHT) socket.pause();
      void handle(line, current.run, current.sampler).then((message) => {
        inFlight -= 1;
        if (inFlight === MAX_IN_FLIGHT - 1) socket.resume();
        reply(message);
      });
    }
  });
  socket.on('error', () => {});
}

function tokenOf(line: string): string {
  try {
    const value = JSON.parse(line) as { token?: unknown };
    return typeof value.token === 'string' ? value.token : '';
  } catch {
    return '';
  }
}

async function handle(
  line: string,
  run: BridgeRun | undefined,
  sampler: Sampler | undefined,
): Promise<object> {
  let parsed: z.output<ReturnType<typeof request>>;
  try {
    parsed = request().parse(JSON.parse(line));
  } catch {
    return { id: idOf(line), error: { code: 'INVALID_REQUEST', message: 'not a valid bridge request' } };
  }
  if (!run) {
    const message = 'codexec bridge: this run has no code mode (no downstream MCP server for it)';
    return { id: parsed.id, error: { code: 'NOT_AVAILABLE', message } };
  }
  try {
    switch (parsed.method) {
      case 'call':
        return { id: parsed.id, result: await run.call(parsed.params.name, parsed.params.args) };
      case 'discover':
        return { id: parsed.id, result: await run.discover(parsed.params.search) };
      case 'search':
        return { id: parsed.id, result: await run.search(parsed.params.query, parsed.params.limit) };
      case 'schema':
        return { id: parsed.id, result: await run.schema(parsed.params.name) };
      case 'sample':
        if (!sampler) {
          throw new BridgeError(
            'SAMPLING_UNAVAILABLE',
            'sampling not available: the run was started without enable_sampling',
          );
        }
        return { id: parsed.id, result: await sampler.think(parsed.params) };
    }
  } catch (error) {
    const code = error instanceof BridgeError ? error.code : 'DOWNSTREAM_ERROR';
    return { id: parsed.id, error: { code, message: (error as Error).message } };
  }
}

function idOf(line: string): number | null {
  try {
    const id = (JSON.parse(line) as { id?: unknown }).id;
    return typeof id === 'number' ? id : null;
  } catch {
    return null;
  }
}
