import { closeSync, writeSync } from 'node:fs';
import type { SandboxedProcess } from '../sandbox/index.js';

/** The program's file, created empty in the workspace and opened before the sandbox started. */
export interface ScriptFile {
  readonly path: string;
  readonly fd: number;
}

/** Something a warm process holds beside its sandbox (code mode's channel), closed with it. */
export interface Companion {
  close(): Promise<void>;
}

/**
 * A sandboxed interpreter started ahead of time in its own fresh workspace, waiting for one job.
 * Its driver talks on the control channel in lines: "R" once it waits for the job (warmed up),
 * then the program's exit status when it has run.
 */
export class WarmProcess {
  private exitedEarly = false;
  private warmedUp = false;
  /** Resolves once the driver waits for its job (or never, if it dies first). */
  readonly ready: Promise<void>;
  private onReady: () => void = () => {};
  /** Set by launch(): takes the status line, or undefined once the channel ends without one. */
  private onStatus: ((status: number | undefined) => void) | undefined;
  private statusLine: string | undefined;
  private ended = false;

  constructor(
    readonly id: string,
    readonly execDir: string,
    readonly proc: SandboxedProcess,
    private script?: ScriptFile,
    /** Closed when the process is discarded unused; a run that takes it closes it itself. */
    readonly companion?: Companion,
    readonly startedAt = Date.now(),
  ) {
    void proc.exited.then(() => {
      this.exitedEarly = true;
    });
    this.ready = new Promise((resolve) => {
      this.onReady = () => {
        this.warmedUp = true;
        resolve();
      };
    });
    let partial = '';
    const control = proc.control;
    control?.setEncoding('utf8');
    control?.on('data', (chunk: string) => {
      const lines = (partial + chunk).split('\n');
      partial = lines.pop() ?? '';
      for (const line of lines) {
        if (line === 'R') this.onReady();
        else this.statusLine ??= line;
      }
      // Anything but short lines is not the driver talking.
      if (partial.length > 16) this.ended = true;
      this.report();
    });
    const end = () => {
      this.ended = true;
      this.report();
    };
    control?.once('end', end);
    control?.once('close', end);
  }

  private report(): void {
    if (!this.onStatus) return;
    if (this.statusLine !== undefined) {
      this.onStatus(/^\d{1,3}$/.test(this.statusLine) ? Number(this.statusLine) & 0xff : undefined);
    } else if (this.ended) this.onStatus(undefined);
  }

  get alive(): boolean {
    return !this.exitedEarly;
  }

  /** Its driver has said it waits for the job: a run that takes it now waits for no start-up. */
  get isReady(): boolean {
    return this.warmedUp && !this.exitedEarly;
  }

  /** What this process (and its sandbox) uses while it waits, in MB, if the backend can tell. */
  memoryMb(): number | undefined {
    return this.proc.memoryMb?.();
  }

  /**
   * Hand over the one program this process will ever run. Resolves with its exit status when the
   * driver reports one, or undefined if it never does. Drivers that can write `endMark` on stdout
   * and stderr after the program's output (python) do.
   */
  launch(script: string, args: readonly string[], endMark: string): Promise<number | undefined> {
    const control = this.proc.control;
    if (!control) throw new Error('warm process has no control channel');
    const status = new Promise<number | undefined>((resolve) => {
      this.onStatus = resolve;
    });
    this.report();
    // Its length in bytes and fields first: a driver need not wait for the half-close, which leaves
    // only once the event loop turns (~0.4 ms after the job here). Each field ends with a NUL: bash
    // reads that many, where it would wait for the end of file after the last of NUL-separated ones.
    const fields = [endMark, this.proc.insidePath?.(script) ?? script, ...args];
    const job = Buffer.from(fields.map((field) => `${field}\0`).join(''), 'utf8');
    const framed = Buffer.concat([Buffer.from(`${job.length} ${fields.length}\n`), job]);
    // The driver exits once the channel ends after its report. Where the sandbox holds the run's
    // processes stopped until dispose(), the channel ends with the sandbox: the driver's exit, and
    // its sandbox's teardown, then come after the result (~0.3 ms of a paced python run, measured).
    if (this.proc.holdsStopped) control.write(framed);
    else control.end(framed);
    return status;
  }

  /**
   * Write the program to `path` through the file opened ahead: one positional write, where
   * creating the file then costs ~0.3 ms of a paced run (a VM's ext4). False when there is none
   * for `path` (the caller writes it); either way the file opened ahead is closed.
   */
  writeScript(path: string, content: string): boolean {
    const script = this.script;
    try {
      if (script?.path !== path) return false;
      const bytes = Buffer.from(content, 'utf8');
      for (let done = 0; done < bytes.length; )
        done += writeSync(script.fd, bytes, done, bytes.length - done, done);
      return true;
    } finally {
      this.closeScript();
    }
  }

  /** Close the file opened ahead unwritten (the program is written by path instead). */
  closeScript(): void {
    if (this.script) closeSync(this.script.fd);
    this.script = undefined;
  }

  /** Discard without running anything (pool shrink, shutdown). */
  async discard(): Promise<void> {
    this.closeScript();
    this.proc.control?.destroy();
    this.proc.kill('SIGKILL');
    await this.proc.exited;
    await Promise.all([this.proc.dispose(), this.companion?.close()]);
  }
}
