// A session driver's control channel (fd 3): frames to it, and its messages decoded and dispatched —
// `ready` to the start-up wait, a cell's `done` to the send that waits for it, background
// processes' events to their table. A corrupt channel ends the session.
import type { Exit, SandboxedProcess } from '../sandbox/index.js';
import {
  type DoneMessage,
  type DriverMessage,
  type ExecMessage,
  encodeFrame,
  FrameDecoder,
  type ProcEvent,
  type ProcMessage,
} from './protocol.js';

export class ControlLink {
  private readonly decoder = new FrameDecoder();
  private waiting: { readonly id: string; readonly resolve: (done: DoneMessage) => void } | undefined;
  private onReady: (() => void) | undefined;

  constructor(
    private readonly proc: SandboxedProcess,
    private readonly onProcess: ((event: ProcEvent) => void) | undefined,
    /** The channel carried what no driver writes: the session must end. */
    private readonly onCorrupt: (error: Error) => void,
  ) {
    const control = proc.control;
    if (!control) throw new TypeError('session drivers need a control channel');
    control.on('data', (chunk: Buffer) => this.receive(chunk));
  }

  /** The driver's `ready`, its exit, or `timeout` after `ms`, whichever comes first. */
  async ready(ms: number): Promise<'ready' | 'timeout' | Exit> {
    let timer: NodeJS.Timeout | undefined;
    const ready = new Promise<'ready'>((resolve) => {
      this.onReady = () => resolve('ready');
    });
    const timeout = new Promise<'timeout'>((resolve) => {
      timer = setTimeout(() => resolve('timeout'), ms);
    });
    try {
      return await Promise.race([ready, timeout, this.proc.exited]);
    } finally {
      clearTimeout(timer);
      this.onReady = undefined;
    }
  }

  /** Send a cell; resolves with its `done`. */
  exec(message: ExecMessage): Promise<DoneMessage> {
    const done = new Promise<DoneMessage>((resolve) => {
      this.waiting = { id: message.id, resolve };
    });
    this.write(message);
    return done;
  }

  /** The cell ended (or the session did): a late `done` is nobody's. */
  forget(): void {
    this.waiting = undefined;
  }

  write(message: ExecMessage | ProcMessage): void {
    this.proc.control?.write(encodeFrame(message));
  }

  private receive(chunk: Buffer): void {
    let messages: DriverMessage[];
    try {
      messages = this.decoder.push(chunk);
    } catch (error) {
      this.onCorrupt(error as Error);
      return;
    }
    for (const message of messages) {
      if (message.type === 'ready') this.onReady?.();
      else if (message.type === 'done') {
        if (message.id === this.waiting?.id) this.waiting.resolve(message);
      } else this.onProcess?.(message);
    }
  }
}
