// The control channel of a containerised driver. The engine's CLI passes no extra descriptors, so
// the server listens on a Unix socket in the run's workspace; the launcher in the container
// (drivers/container_control.py) connects to it and makes the connection the driver's fd 3. The
// first connection is the driver's: the socket file goes at once, so the code never reaches it.
import { chmodSync, unlinkSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import { join } from 'node:path';
import { Duplex } from 'node:stream';
import { quietly } from '../../util/index.js';
import { CONTROL_SOCKET } from './args.js';

/**
 * A Duplex usable at once that joins the driver's connection when it arrives: writes wait until
 * then, and it ends (with no data) if none ever comes.
 */
class ControlChannel extends Duplex {
  private socket: Socket | undefined;
  private waiting: Array<() => void> = [];

  /** The launcher's first line: the container's cgroups (/proc/self/cgroup, lines joined by ";"). */
  header: string | undefined;
  private partial: Buffer = Buffer.alloc(0);

  attach(socket: Socket): void {
    this.socket = socket;
    socket.on('data', (chunk: Buffer) => {
      let data = chunk;
      if (this.header === undefined) {
        data = Buffer.concat([this.partial, chunk]);
        const newline = data.indexOf(10);
        if (newline === -1) {
          // A header longer than any /proc/self/cgroup: not the launcher talking.
          if (data.length > 64 * 1024) socket.destroy();
          this.partial = data;
          return;
        }
        this.header = data.subarray(0, newline).toString('utf8');
        data = data.subarray(newline + 1);
        this.partial = Buffer.alloc(0);
        if (data.length === 0) return;
      }
      if (!this.push(data)) socket.pause();
    });
    socket.once('end', () => this.push(null));
    socket.once('close', () => this.destroy());
    socket.on('error', () => {});
    for (const go of this.waiting.splice(0)) go();
  }

  override _read(): void {
    this.socket?.resume();
  }

  override _write(chunk: Buffer, _encoding: BufferEncoding, done: (error?: Error | null) => void): void {
    const write = () => (this.socket ? this.socket.write(chunk, () => done()) : done());
    if (this.socket) write();
    else this.waiting.push(write);
  }

  override _final(done: (error?: Error | null) => void): void {
    const end = () => {
      this.socket?.end();
      done();
    };
    if (this.socket) end();
    else this.waiting.push(end);
  }

  override _destroy(error: Error | null, done: (error?: Error | null) => void): void {
    this.socket?.destroy();
    done(error);
  }
}

export interface ControlListener {
  readonly channel: Duplex;
  /** The container's cgroups as its launcher saw them, once it has connected. */
  cgroups(): string | undefined;
  /** Stop waiting for the driver (it died, or the run was discarded). */
  close(): void;
}

/** Listen in `workspace` for the driver's connection; the socket is writable by the run's uid. */
export function listenForDriver(workspace: string): ControlListener {
  const path = join(workspace, CONTROL_SOCKET);
  quietly(() => unlinkSync(path));
  const channel = new ControlChannel();
  const server: Server = createServer();
  const close = () => {
    server.close();
    quietly(() => unlinkSync(path));
  };
  server.once('connection', (socket) => {
    close();
    channel.attach(socket);
  });
  server.on('error', () => {
    close();
    channel.destroy();
  });
  // Bound before listen() returns (a pipe server binds synchronously): the driver starts later.
  server.listen(path);
  quietly(() => chmodSync(path, 0o666));
  server.unref();
  return { channel, close, cgroups: () => channel.header };
}
