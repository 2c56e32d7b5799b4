// Launchers without forking the server. child_process.spawn forks the calling process
// synchronously: for a server with ~100 MB resident that is several ms per sandbox during which
// no MCP message is read and no output collected. The forker is a small Python helper
// (drivers/forker.py) that pre-forks launchers itself: each joins its run cgroup, connects its
// stdio to this process's Unix socket listener (the same kind of pipe Node's spawn makes), and
// execs bwrap when given the argv. Without a host Python, launchers are bash processes spawned
// here, as before.
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { EventEmitter } from 'node:events';
import { createServer, type Server, type Socket } from 'node:net';
import type { Readable, Writable } from 'node:stream';
import { log, packagePath } from '../../util/index.js';

const SCRIPT = packagePath('drivers', 'forker.py');
/** The first bytes on every slot: 32 hex chars of token, the slot number in 4 digits. */
const HEADER_BYTES = 36;

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

/** A launcher forked by the helper: its exit is reported by it; signals go straight to the pid. */
class RemoteChild extends EventEmitter implements ChildLike {
  exitCode: number | null = null;
  signalCode: NodeJS.Signals | null = null;

  private held = false;

  constructor(
    readonly pid: number,
    readonly stdio: ReadonlyArray<Socket | null>,
    /** Keeps the forker's report channel referenced while a child in use may still report. */
    private readonly hold: (delta: 1 | -1) => void,
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
  // Its exit comes from the forker: a child in use keeps that channel (and the loop) alive.
  ref(): void {
    if (this.held || this.exitCode !== null || this.signalCode !== null) return;
    this.held = true;
    this.hold(1);
  }
  unref(): void {
    if (!this.held) return;
    this.held = false;
    this.hold(-1);
  }

  exited(code: number | null, signal: NodeJS.Signals | null): void {
    if (this.exitCode !== null || this.signalCode !== null) return;
    this.exitCode = code;
    this.signalCode = signal;
    this.unref();
    this.emit('exit', code, signal);
  }
}

type Report =
  | { readonly id: number; readonly ready: number }
  | { readonly id: number; readonly failed: string }
  | { readonly id: number; readonly exit: number | null; readonly signal: NodeJS.Signals | null };

interface Pending {
  readonly stdio: Array<Socket | null>;
  readonly want: number;
  got: number;
  pid?: number;
  /** The child's exit, when it came before it was ready. */
  exit?: { readonly code: number | null; readonly signal: NodeJS.Signals | null };
  readonly resolve: (child: ChildLike) => void;
  readonly reject: (error: Error) => void;
}

export class Forker {
  private helper: ChildProcess | undefined;
  private server: Server | undefined;
  private readonly address = `\0codexec-forker-${process.pid}-${randomBytes(8).toString('hex')}`;
  private listening: Promise<void> | undefined;
  private nextId = 1;
  private readonly pending = new Map<number, Pending>();
  private readonly tokens = new Map<string, number>();
  private readonly children = new Map<number, RemoteChild>();
  private broken = false;

  /**
   * `python` runs drivers/forker.py on the host (any Python 3.8+), isolated (-I -S) and with an
   * empty environment; or `helperProgram`'s arguments with its environment (drivers/zygote.py).
   */
  constructor(
    private readonly python: string,
    private readonly helperProgram: { readonly args: readonly string[]; readonly env: NodeJS.ProcessEnv } = {
      args: ['-I', '-S', SCRIPT],
      env: {},
    },
  ) {}

  /** false once the helper could not start or died: callers spawn launchers themselves. */
  get usable(): boolean {
    return !this.broken;
  }

  /**
   * A launcher: a process in the run cgroup `cgroupDirs` (already joined), its pipe slots
   * connected, waiting for its job on ARGV_FD (launcher.ts). `more` goes with the request: the
   * zygote's fork of a run (zygote.ts).
   */
  async launcher(
    slots: ReadonlyArray<'pipe' | 'ignore'>,
    cgroupDirs: readonly string[],
    more: Readonly<Record<string, unknown>> = {},
  ): Promise<ChildLike> {
    this.keep();
    const helper = await this.start();
    const id = this.nextId++;
    const token = randomBytes(16).toString('hex');
    return new Promise((resolve, reject) => {
      this.pending.set(id, {
        stdio: slots.map(() => null),
        want: slots.filter((slot) => slot === 'pipe').length,
        got: 0,
        resolve,
        reject,
      });
      this.tokens.set(token, id);
      const job = { ...more, id, address: this.address, token, slots, cgroup: cgroupDirs };
      helper.stdin?.write(`${JSON.stringify(job)}\n`);
    });
  }

  private start(): Promise<ChildProcess> {
    if (this.broken) return Promise.reject(new Error('the forker is not available'));
    this.listening ??= new Promise<void>((resolve, reject) => {
      const server = createServer((socket) => this.accept(socket));
      server.once('error', (error) => {
        this.fail(error);
        reject(error);
      });
      server.listen(this.address, () => resolve());
      server.unref();
      this.server = server;
    });
    this.helper ??= this.spawnHelper();
    const helper = this.helper;
    return this.listening.then(() => helper);
  }

  /**
   * Idle (the launchers' pool let its ready ones go): the helper ends too once the last of its
   * launchers has exited, unless one is asked for before; the next is started on demand.
   */
  retire(): void {
    this.retiring = true;
    this.retireIfIdle();
  }

  /** In use again: a retirement asked for at idle is off. */
  keep(): void {
    this.retiring = false;
  }

  private retiring = false;

  private retireIfIdle(): void {
    const helper = this.helper;
    if (!this.retiring || !helper || this.children.size > 0 || this.pending.size > 0) return;
    this.retiring = false;
    this.helper = undefined;
    // Said first: an end of input without it is the server's death, whose runs the helper kills.
    helper.stdin?.end(`${JSON.stringify({ retire: true })}\n`); // it reaps what is left and exits
  }

  private spawnHelper(): ChildProcess {
    const helper = spawn(this.python, this.helperProgram.args, {
      cwd: '/',
      env: this.helperProgram.env,
      stdio: ['pipe', 'pipe', 'inherit'],
    });
    // A retired helper's end is expected; any other's makes the forker unusable.
    const unexpected = (error: Error) => {
      if (helper === this.helper) this.fail(error);
    };
    helper.once('error', unexpected);
    helper.once('exit', (code, signal) => unexpected(new Error(`the forker exited (${code ?? signal})`)));
    helper.stdin?.on('error', () => {});
    let buffered = '';
    helper.stdout?.setEncoding('utf8');
    helper.stdout?.on('data', (chunk: string) => {
      buffered += chunk;
      for (let nl = buffered.indexOf('\n'); nl !== -1; nl = buffered.indexOf('\n')) {
        const line = buffered.slice(0, nl);
        buffered = buffered.slice(nl + 1);
        try {
          this.onReport(JSON.parse(line) as Report);
        } catch (error) {
          this.fail(new Error(`unreadable report from the forker: ${(error as Error).message}`));
        }
      }
    });
    // Idle, it must not keep the server alive (`codexec run` exits after its run).
    helper.unref();
    (helper.stdin as unknown as { unref?: () => void } | null)?.unref?.();
    (helper.stdout as unknown as { unref?: () => void } | null)?.unref?.();
    return helper;
  }

  private fail(error: Error): void {
    if (this.broken) return;
    this.broken = true;
    const script = this.helperProgram.args.at(-1) ?? 'forker';
    log('warn', `${script} unavailable, its launchers start without it: ${error.message}`);
    this.server?.close();
    this.helper?.kill('SIGKILL');
    for (const pending of this.pending.values()) pending.reject(error);
    this.pending.clear();
    this.tokens.clear();
    // Without the process that reaps them nothing reports their exit: end them now.
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

  /** A slot connecting: its header names the launcher and the fd; then it belongs to that child. */
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
      // A slot connects once (a fork of the zygote holds copies of earlier jobs' tokens); a
      // number past the slots is no slot (undefined).
      if (id === undefined || !pending || !/^\d{4}$/.test(text.slice(32)) || pending.stdio[slot] !== null) {
        socket.destroy();
        return;
      }
      pending.stdio[slot] = socket;
      pending.got++;
      this.settle(id);
    };
    socket.on('readable', onReadable);
  }

  private onReport(report: Report): void {
    const pending = this.pending.get(report.id);
    if ('exit' in report) {
      if (pending) pending.exit = { code: report.exit, signal: report.signal };
      const child = this.children.get(report.id);
      this.children.delete(report.id);
      child?.exited(report.exit, report.signal);
      this.retireIfIdle();
      return;
    }
    if (!pending) return;
    if ('failed' in report) {
      this.forget(report.id);
      for (const socket of pending.stdio) socket?.destroy();
      pending.reject(new Error(report.failed));
      return;
    }
    pending.pid = report.ready;
    this.settle(report.id);
  }

  /** Resolve once the helper reported the launcher ready and every slot has connected. */
  private settle(id: number): void {
    const pending = this.pending.get(id);
    if (pending?.pid === undefined || pending.got < pending.want) return;
    this.forget(id);
    const child = new RemoteChild(pending.pid, pending.stdio, (delta) => this.hold(delta));
    pending.resolve(child);
    if (pending.exit) child.exited(pending.exit.code, pending.exit.signal);
    else this.children.set(id, child);
  }

  private holds = 0;

  /** The report channel is referenced only while some child in use still has to report. */
  private hold(delta: 1 | -1): void {
    this.holds += delta;
    const stream = this.helper?.stdout as unknown as { ref?: () => void; unref?: () => void } | undefined;
    if (this.holds > 0) stream?.ref?.();
    else stream?.unref?.();
  }

  private forget(id: number): void {
    this.pending.delete(id);
    for (const [token, owner] of this.tokens) if (owner === id) this.tokens.delete(token);
  }
}
