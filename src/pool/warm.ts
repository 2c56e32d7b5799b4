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

  /**
   * Hand over the one program this process will ever run. Resolves with its exit status when the
   * driver reports one ("<status>\n" on the control channel), or undefined if it never does.
   */
  launch(script: string, args: readonly string[]): Promise<number | undefined> {
    const control = this.proc.control;
    if (!control) throw new Error('warm process has no control channel');
    const status = new Promise<number | undefined>((resolve) => {
      let text = '';
      control.setEncoding('utf8');
      control.on('data', (chunk: string) => {
        text += chunk;
        const line = /^(\d{1,3})\n/.exec(text);
        if (line) resolve(Number(line[1]) & 0xff);
        else if (text.length > 8) resolve(undefined); // not the driver talking
      });
      control.once('close', () => resolve(undefined));
      control.once('end', () => resolve(undefined));
    });
    control.end(Buffer.from([script, ...args].join('\0'), 'utf8'));
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
