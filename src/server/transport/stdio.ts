import type { Readable, Writable } from 'node:stream';
import type { JSONRPCMessage, Transport } from '@modelcontextprotocol/server';
import { CodexecError, toCodexecError } from '../../errors/index.js';
import { log } from '../../util/index.js';
import { classifyOversize, classifyText, type ErrorReply, type Verdict } from './frames.js';
import { type Frame, LineSplitter } from './lines.js';

export interface FramedStdioOptions {
  /** Largest frame passed on whole; larger ones are refused by id (CODEXEC_MAX_MESSAGE_BYTES). */
  readonly maxMessageBytes: number;
  readonly stdin?: Readable;
  readonly stdout?: Writable;
  /** Called once when stdin ends or closes: the client is gone. */
  readonly onInputEnd?: () => void;
  /** Called as bytes come in and as each message goes out. */
  readonly onActivity?: () => void;
}

/**
 * MCP over newline-delimited JSON on stdio, in place of the SDK's `StdioServerTransport`,
 * whose read buffer throws past 10 MB and then closes the connection (and with it the server).
 * Here no frame ends the connection: each is split with bounded memory, classified
 * (`frames.ts`), and either passed on, answered with a JSON-RPC error, or logged and dropped.
 */
export class FramedStdioTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;

  private readonly stdin: Readable;
  private readonly stdout: Writable;
  private readonly splitter: LineSplitter;
  private started = false;
  private closed = false;
  private inputEnded = false;

  constructor(private readonly options: FramedStdioOptions) {
    this.stdin = options.stdin ?? process.stdin;
    this.stdout = options.stdout ?? process.stdout;
    this.splitter = new LineSplitter(options.maxMessageBytes);
  }

  async start(): Promise<void> {
    if (this.started) throw new CodexecError('INTERNAL', 'FramedStdioTransport already started');
    this.started = true;
    this.stdin.on('data', this.onData);
    this.stdin.on('error', this.onStdinError);
    this.stdin.on('end', this.onEnd);
    this.stdin.on('close', this.onEnd);
    this.stdout.on('error', this.onStdoutError);
    if (this.stdin.readableEnded || this.stdin.destroyed) setImmediate(this.onEnd);
  }

  send(message: JSONRPCMessage): Promise<void> {
    this.options.onActivity?.();
    return this.write(message);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.stdin.off('data', this.onData);
    this.stdin.off('error', this.onStdinError);
    this.stdin.off('end', this.onEnd);
    this.stdin.off('close', this.onEnd);
    this.stdin.pause();
    // stdout's 'error' listener stays: a late write to a closed pipe must not become uncaught.
    this.onclose?.();
  }

  private readonly onData = (chunk: Buffer): void => {
    this.options.onActivity?.();
    // Nothing a client sends may throw out of here (an exception would end the process), and
    // one frame's failure must not cost the frames after it in the same chunk.
    for (const frame of this.splitter.push(chunk)) {
      try {
        this.handle(this.classify(frame));
      } catch (error) {
        this.onerror?.(toCodexecError(error));
      }
    }
  };

  private classify(frame: Frame): Verdict {
    if (frame.kind === 'line') return classifyText(frame.bytes.toString('utf8'));
    const { head, tail, bytes } = frame;
    return classifyOversize(
      head.toString('utf8'),
      tail.toString('utf8'),
      bytes,
      this.options.maxMessageBytes,
    );
  }

  private handle(verdict: Verdict): void {
    switch (verdict.kind) {
      case 'deliver':
        this.onmessage?.(verdict.message);
        return;
      case 'reply':
        log('warn', `transport: ${verdict.why.slice(0, 300)}`);
        for (const reply of verdict.replies) {
          this.write(reply).catch((error: Error) => this.onerror?.(error));
        }
        return;
      case 'drop':
        log('warn', `transport: ${verdict.why.slice(0, 300)}`);
        return;
      case 'ignore':
        return;
    }
  }

  /** One JSON line out, resolved once stdout took it (or drained: backpressure is the client's). */
  private write(message: JSONRPCMessage | ErrorReply): Promise<void> {
    if (this.closed) return Promise.reject(new CodexecError('INTERNAL', 'the stdio transport is closed'));
    const line = `${JSON.stringify(message)}\n`;
    return new Promise((resolve, reject) => {
      const onError = (error: Error) => {
        this.stdout.off('drain', onDrain);
        reject(error);
      };
      const onDrain = () => {
        this.stdout.off('error', onError);
        resolve();
      };
      this.stdout.once('error', onError);
      if (this.stdout.write(line)) {
        this.stdout.off('error', onError);
        resolve();
      } else {
        this.stdout.once('drain', onDrain);
      }
    });
  }

  private readonly onEnd = (): void => {
    if (this.inputEnded) return;
    this.inputEnded = true;
    this.options.onInputEnd?.();
    void this.close();
  };

  private readonly onStdinError = (error: Error): void => {
    this.onerror?.(error);
  };

  private readonly onStdoutError = (error: Error): void => {
    if (this.closed) return;
    this.onerror?.(error);
    void this.close();
  };
}
