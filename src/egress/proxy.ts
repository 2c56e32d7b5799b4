// A lane: one HTTP proxy listening for one sandbox (a Unix socket in its workspace, or a port on
// 127.0.0.1 for landlock mode), checking every CONNECT and absolute-form request against its
// user's rules and recording each. Node's own http parser reads the requests; tunnel.ts and
// forward.ts answer them. A client's misbehaviour costs it its connection, never the lane.
import { lookup } from 'node:dns/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { log } from '../util/index.js';
import type { Credentials } from './credentials.js';
import { forward } from './forward.js';
import { placeSocket, type SocketPlace } from './socket.js';
import { tunnel } from './tunnel.js';
import type { Lane, LaneContext, LaneOptions, LaneUser, Resolve } from './types.js';

/** Tunnels and requests open at once through one lane; more are answered 503. */
export const MAX_OPEN = 64;
const CONNECT_TIMEOUT_MS = 10_000;

const lookupAll: Resolve = async (host) => (await lookup(host, { all: true })).map((entry) => entry.address);

export async function openLane(
  where: { socket: string } | { tcp: true },
  user?: LaneUser,
  options: LaneOptions = {},
): Promise<Lane> {
  const timeout = options.connectTimeout;
  if (timeout !== undefined && !(Number.isFinite(timeout) && timeout > 0))
    throw new RangeError(`openLane: connectTimeout must be a positive number of ms, not ${timeout}`);
  const lane = new ProxyLane(user, options);
  await lane.listen(where);
  return lane;
}

class ProxyLane implements Lane, LaneContext {
  socket?: string;
  port?: number;
  readonly resolve: Resolve;
  readonly connectTimeout: number;
  readonly credentials: Credentials | undefined;
  #user: LaneUser | undefined;
  #open = 0;
  readonly #sockets = new Set<Socket>();
  readonly #abort = new AbortController();
  readonly #server: Server;
  #place?: SocketPlace;
  #closing?: Promise<void>;

  constructor(user: LaneUser | undefined, options: LaneOptions) {
    this.#user = user;
    this.resolve = options.resolve ?? lookupAll;
    this.connectTimeout = options.connectTimeout ?? CONNECT_TIMEOUT_MS;
    this.credentials = options.credentials;
    // No time limit on a whole request (a long upload is not an attack; MAX_OPEN bounds them).
    this.#server = createServer({ requestTimeout: 0 });
    // Client connections, busy or idle (node closes those beyond it at once): descriptors bounded.
    this.#server.maxConnections = 4 * MAX_OPEN;
    this.#server.on('connection', (socket: Socket) => this.track(socket));
    this.#server.on('connect', (req, socket, head) => this.#run(tunnel(this, req, socket, head), socket));
    this.#server.on('request', (req, res) => this.#run(forward(this, req, res), req.socket));
  }

  get user(): LaneUser | undefined {
    return this.#user;
  }

  get signal(): AbortSignal {
    return this.#abort.signal;
  }

  use(user: LaneUser | undefined): void {
    this.#user = user;
  }

  acquire(): (() => void) | undefined {
    if (this.#open >= MAX_OPEN || this.#abort.signal.aborted) return undefined;
    this.#open += 1;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.#open -= 1;
    };
  }

  track(socket: Socket): void {
    if (this.#abort.signal.aborted) {
      socket.destroy();
      return;
    }
    this.#sockets.add(socket);
    socket.once('close', () => this.#sockets.delete(socket));
  }

  async listen(where: { socket: string } | { tcp: true }): Promise<void> {
    const server = this.#server;
    const listening = (options: { path: string } | { port: number; host: string }) =>
      new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen(options, () => {
          server.off('error', reject);
          resolve();
        });
      });
    try {
      if ('socket' in where) {
        this.#place = placeSocket(where.socket);
        await listening({ path: this.#place.listenPath });
        this.#place.open();
        this.socket = where.socket;
      } else {
        await listening({ port: 0, host: '127.0.0.1' });
        this.port = (server.address() as AddressInfo).port;
      }
    } catch (error) {
      await this.close();
      throw error;
    }
    // After listening, the server's errors are accept(2)'s (out of descriptors): it keeps going.
    server.on('error', (error) => log('warn', `egress proxy: ${error.message}`));
  }

  close(): Promise<void> {
    this.#closing ??= this.#close();
    return this.#closing;
  }

  async #close(): Promise<void> {
    this.#abort.abort();
    const stopped = new Promise<void>((resolve) => this.#server.close(() => resolve()));
    for (const socket of this.#sockets) socket.destroy();
    await stopped;
    this.#place?.release();
  }

  /** A handler's work: a failure it did not foresee ends its connection, not the lane. */
  #run(work: Promise<void>, socket: { destroy(): void }): void {
    work.catch((error: unknown) => {
      log(
        'error',
        `egress proxy: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`,
      );
      socket.destroy();
    });
  }
}
