import type { SandboxedProcess } from '../sandbox/index.js';

/** A sandboxed interpreter started ahead of time in its own fresh workspace, waiting for one job. */
export class WarmProcess {
  private exitedEarly = false;

  constructor(
    readonly id: string,
    readonly execDir: string,
    readonly proc: SandboxedProcess,
    readonly startedAt = Date.now(),
  ) {
    void proc.exited.then(() => {
      this.exitedEarly = true;
    });
  }

  get alive(): boolean {
    return !this.exitedEarly;
  }

  /** Hand over the one program this process will ever run. */
  launch(script: string, args: readonly string[]): void {
    const control = this.proc.control;
    if (!control) throw new Error('warm process has no control channel');
    control.end(Buffer.from([script, ...args].join('\0'), 'utf8'));
  }

  /** Discard without running anything (pool shrink, shutdown). */
  async discard(): Promise<void> {
    this.proc.control?.destroy();
    this.proc.kill('SIGKILL');
    await this.proc.exited;
    await this.proc.dispose();
  }
}
