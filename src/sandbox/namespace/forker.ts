// Spawning off the event loop. child_process.spawn forks the calling process synchronously; for
// a server with ~100 MB resident that is several ms per sandbox during which no MCP message is
// read and no output collected, and at concurrency 8 it was most of the main thread's time. The
// forker has a small helper process (forker-worker.ts) do it and hands back a ChildLike whose
// stdio are Unix stream sockets accepted here, the same kind of pipe Node's spawn makes.

import { type ChildProcess, fork } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { EventEmitter } from 'node:events';
import { existsSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import type { Readable, Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { log } from '../../util/index.js';
import type { CgroupLayout, CgroupLimits } from './cgroups.js';
import { HEADER_BYTES, header, type SpawnJob, type WorkerReport } from './forker-worker.js';

/** What the launcher code uses of a child process; ChildProcess and RemoteChild both are one. */
export interface ChildLike extends EventEmitter {
  readonly pid?: number | undefined;
  readonly exitCode: number | null;
  readonly signalCode: NodeJS.Signals | null;
  readonly stdio: ReadonlyArray<Readable | Writable | null | undefined>;
  readonly stdin: Writable | null;
  readonly stdout: Readable | null;
  readonly stderr: Readable | null;
  ref(): void;
  unref(): void;
}

/** A child spawned by the worker: events arrive from it; signals go straight to the pid. */
class RemoteChild extends EventEmitter implements ChildLike {
  exitCode: number | null = null;
  signalCode: NodeJS.Signals | null = null;

  constructor(
    readonly pid: number,
    readonly stdio: ReadonlyArray<Socket | null>,
  ) {
    super();
  }

  get stdin(): Socket | null {
    return this.stdio[0] ?? null;
  }
  get stdout(): Socket | null {
    return this.stdio[1] ?? null;
  }
  get stderr(): Socket | null {
    return this.stdio[2] ?? null;
  }
  // Nothing here holds the event loop; the child's sockets do (the launcher code refs them).
  ref(): void {}
  unref(): void {}

  exited(code: number | null, signal: NodeJS.Signals | null): void {
    this.exitCode = code;
    this.signalCode = signal;
    this.emit('exit', code, signal);
  }
}

interface Pending {
  readonly stdio: Array<Socket | null>;
  readonly want: number;
  got: number;
  report?: Extract<WorkerReport, { type: 'ready' }>;
  /** The child's exit, when it came before it was ready. */
  exit?: Extract<WorkerReport, { type: 'exit' }>;
  readonly resolve: (value: { child: RemoteChild; cgroupDirs?: string[] }) => void;
  readonly reject: (error: Error) => void;
}

export class Forker {
  private worker: ChildProcess | undefined;
  private server: Server | undefined;
  private readonly address = `\0codexec-forker-${process.pid}-${randomBytes(8).toString('hex')}`;
  private listening: Promise<void> | undefined;
  private nextId = 1;
  private readonly pending = new Map<number, Pending>();
  private readonly tokens = new Map<string, number>();
  private readonly children = new Map<number, RemoteChild>();
  private broken = false;

  /** false once the worker could not start or died: callers spawn on this thread instead. */
  get usable(): boolean {
    return !this.broken;
  }

  /**
   * Spawn `command` detached with cwd `/`, optionally inside a new run cgroup (created, limited and
   * joined before this resolves). Pipe slots become sockets in the returned child's stdio.
   */
  async spawn(
    command: string,
    args: readonly string[],
    env: Record<string, string>,
    stdio: ReadonlyArray<'pipe' | 'ignore'>,
    cgroup?: { readonly layout: CgroupLayout; readonly limits: CgroupLimits },
  ): Promise<{ child: ChildLike; cgroupDirs?: string[] }> {
    const worker = await this.start();
    const id = this.nextId++;
    const token = randomBytes(16).toString('hex');
    const job: SpawnJob = {
      type: 'spawn',
      id,
      command,
      args,
      env,
      stdio,
      address: this.address,
      token,
      ...(cgroup && { cgroup }),
    };
    return new Promise((resolve, reject) => {
      this.pending.set(id, {
        stdio: stdio.map(() => null),
        want: stdio.filter((slot) => slot === 'pipe').length,
        got: 0,
        resolve,
        reject,
      });
      this.tokens.set(token, id);
      worker.send(job);
    });
  }

  private start(): Promise<ChildProcess> {
    if (this.broken) return Promise.reject(new Error('the forker is not available'));
    this.listening ??= new Promise<void>((resolve, reject) => {
      const server = createServer((socket) => this.accept(socket));
      server.once('error', reject);
      server.listen(this.address, () => resolve());
      server.unref();
      this.server = server;
      try {
        const script = fileURLToPath(new URL('./forker-worker.js', import.meta.url));
        // Running from TypeScript sources (tests) there is no compiled helper: spawn here instead.
        if (!existsSync(script)) throw new Error(`${script} is missing`);
        // A minimal environment: nothing the server inherited (NODE_OPTIONS, CA bundles) slows it.
        const worker = fork(script, [], {
          env: {},
          execArgv: [],
          stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
          serialization: 'json',
        });
        worker.unref();
        worker.channel?.unref();
        worker.on('message', (report: WorkerReport) => this.onReport(report));
        worker.on('error', (error) => this.fail(error));
        worker.on('exit', () => this.fail(new Error('the forker process exited')));
        this.worker = worker;
      } catch (error) {
        this.fail(error as Error);
        reject(error);
      }
    });
    return this.listening.then(() => this.worker as ChildProcess);
  }

  private fail(error: Error): void {
    if (this.broken) return;
    this.broken = true;
    log('warn', `forker unavailable, spawning on the main thread: ${error.message}`);
    this.server?.close();
    for (const pending of this.pending.values()) pending.reject(error);
    this.pending.clear();
    // Without the thread that spawned them nothing reports their exit: end them now.
    for (const child of this.children.values()) {
      try {
        process.kill(child.pid, 'SIGKILL');
      } catch {
        // already gone
      }
      child.exited(null, 'SIGKILL');
    }
    this.children.clear();
  }

  /** A slot connecting: its header names the job and the fd; then it belongs to that child. */
  private accept(socket: Socket): void {
    socket.on('error', () => {});
    const timer = setTimeout(() => socket.destroy(), 5000);
    const onReadable = () => {
      const head = socket.read(HEADER_BYTES) as Buffer | null;
      if (head === null) return;
      socket.removeListener('readable', onReadable);
      clearTimeout(timer);
      const text = head.toString('latin1');
      const id = this.tokens.get(text.slice(0, 32));
      const pending = id === undefined ? undefined : this.pending.get(id);
      const slot = Number(text.slice(32));
      if (
        !pending ||
        id === undefined ||
        header(text.slice(0, 32), slot) !== text ||
        slot >= pending.stdio.length
      ) {
        socket.destroy();
        return;
      }
      pending.stdio[slot] = socket;
      pending.got++;
      this.settle(id);
    };
    socket.on('readable', onReadable);
  }

  private onReport(report: WorkerReport): void {
    const pending = this.pending.get(report.id);
    if (report.type === 'exit') {
      if (pending) pending.exit = report;
      const child = this.children.get(report.id);
      this.children.delete(report.id);
      child?.exited(report.code, report.signal as NodeJS.Signals | null);
      return;
    }
    if (!pending) return;
    if (report.type === 'failed') {
      this.forget(report.id);
      for (const socket of pending.stdio) socket?.destroy();
      pending.reject(new Error(report.message));
      return;
    }
    pending.report = report;
    this.settle(report.id);
  }

  /** Resolve once the worker reported the child ready and every slot has connected. */
  private settle(id: number): void {
    const pending = this.pending.get(id);
    if (!pending?.report || pending.got < pending.want) return;
    this.forget(id);
    const child = new RemoteChild(pending.report.pid, pending.stdio);
    const { cgroupDirs } = pending.report;
    pending.resolve({ child, ...(cgroupDirs && { cgroupDirs }) });
    if (pending.exit) child.exited(pending.exit.code, pending.exit.signal as NodeJS.Signals | null);
    else this.children.set(id, child);
  }

  private forget(id: number): void {
    this.pending.delete(id);
    for (const [token, owner] of this.tokens) if (owner === id) this.tokens.delete(token);
  }
}
