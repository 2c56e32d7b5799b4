import type { SandboxedProcess } from '../sandbox/index.js';

/**
 * Timeout and cancellation of one send. Either one interrupts the code (SIGINT to the process
 * group: KeyboardInterrupt, breakOnSigint, the bash trap) so the session keeps its state; if the
 * driver has not answered `graceMs` later, the group is SIGKILLed and the session is over.
 */
export class SendStopper {
  timedOut = false;
  cancelled = false;
  /** The grace period ran out and the process group was killed. */
  killed = false;
  private readonly timer: NodeJS.Timeout;
  private grace: NodeJS.Timeout | undefined;
  private readonly onAbort = () => {
    this.cancelled = true;
    this.interrupt();
  };

  constructor(
    private readonly proc: SandboxedProcess,
    readonly timeoutMs: number,
    private readonly graceMs: number,
    private readonly signal: AbortSignal | undefined,
    private readonly onKill: () => void,
  ) {
    this.timer = setTimeout(() => {
      this.timedOut = true;
      this.interrupt();
    }, timeoutMs);
    signal?.addEventListener('abort', this.onAbort, { once: true });
    if (signal?.aborted) this.onAbort();
  }

  get stopped(): boolean {
    return this.timedOut || this.cancelled;
  }

  /** What happened, for the end of stderr; '' when the send was not stopped. */
  note(driverAnswered: boolean): string {
    if (!this.stopped) return '';
    const why = this.timedOut ? `timed out after ${this.timeoutMs} ms` : 'cancelled';
    if (driverAnswered)
      return `\n[codexec: ${why}; the code was interrupted and the session kept its state]\n`;
    if (this.killed)
      return `\n[codexec: ${why}; the code ignored the interrupt for ${this.graceMs} ms, so the session's process was killed]\n`;
    return `\n[codexec: ${why}; the session's process ended when it was interrupted]\n`;
  }

  dispose(): void {
    clearTimeout(this.timer);
    clearTimeout(this.grace);
    this.signal?.removeEventListener('abort', this.onAbort);
  }

  private interrupt(): void {
    if (this.grace) return;
    this.proc.kill('SIGINT');
    this.grace = setTimeout(() => {
      this.killed = true;
      this.onKill();
      this.proc.kill('SIGKILL');
    }, this.graceMs);
  }
}
