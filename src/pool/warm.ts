import type { SandboxedProcess } from '../sandbox/index.js';

/**
 * A sandboxed interpreter started ahead of time in its own fresh workspace, waiting for one job.
 * Its driver talks on the control channel in lines: "R" once it waits for the job (warmed up),
 * then the program's exit status when it has run.
 */
export class WarmProcess {
  private exitedEarly = false;
  private lines: string[] = [];
  private partial = '';
  private ended = false;
  private listener: (() => void) | undefined;
  /** Resolves once the driver waits for its job (or never, if it dies first). */
  readonly ready: Promise<void>;

  constructor(
    readonly id: string,
    readonly execDir: string,
    readonly proc: SandboxedProcess,
    readonly startedAt = Date.now(),
  ) {
    void proc.exited.then(() => {
      this.exitedEarly = true;
    });
    const control = proc.control;
    control?.setEncoding('utf8');
    control?.on('data', (chunk: string) => {
      this.partial += chunk;
      const parts = this.partial.split('\n');
      this.partial = parts.pop() ?? '';
      this.lines.push(...parts);
      // Anything but short lines is not the driver talking.
      if (this.partial.length > 16) this.end();
      this.listener?.();
    });
    control?.once('end', () => this.end());
    control?.once('close', () => this.end());
    this.ready = new Promise((resolve) => {
      const check = () => {
        if (this.lines[0] === 'R') {
          this.lines.shift();
          this.listener = undefined;
          resolve();
        }
      };
      this.listener = check;
    });
  }

  private end(): void {
    this.ended = true;
    this.listener?.();
  }

  get alive(): boolean {
    return !this.exitedEarly;
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
      const check = () => {
        const lines = this.lines.filter((line) => line !== 'R');
        const line = lines[0];
        if (line !== undefined) resolve(/^\d{1,3}$/.test(line) ? Number(line) & 0xff : undefined);
        else if (this.ended) resolve(undefined);
      };
      this.listener = check;
      check();
    });
    control.end(Buffer.from([endMark, script, ...args].join('\0'), 'utf8'));
    return status;
  }

  /** Discard without running anything (pool shrink, shutdown). */
  async discard(): Promise<void> {
    this.proc.control?.destroy();
    this.proc.kill('SIGKILL');
    await this.proc.exited;
    await this.proc.dispose();
  }
}
