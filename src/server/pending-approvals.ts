import { CodexecError } from '../errors/index.js';

/**
 * CODEXEC_MAX_PENDING_APPROVALS: approvals the server waits on at once, all connections together.
 * Each one holds its call's code until someone answers (up to CODEXEC_APPROVAL_TIMEOUT_MS), so
 * past the bound a call is refused LIMIT_REACHED at once instead of piling up in memory. Only a
 * 2025-era elicitation is awaited here; a 2026-era one returns input_required at once and holds
 * nothing (the client's retry carries the answer), so it passes through in microseconds.
 */
export class PendingApprovals {
  private waiting = 0;

  constructor(readonly max: number) {}

  get count(): number {
    return this.waiting;
  }

  /** Count one more pending approval (call the result when it is answered), or refuse. */
  enter(): () => void {
    if (this.waiting >= this.max) {
      throw new CodexecError(
        'LIMIT_REACHED',
        `${this.max} runs are already waiting for approval, the most the server holds ` +
          '(CODEXEC_MAX_PENDING_APPROVALS). Nothing ran; answer those first, then try again',
      );
    }
    this.waiting += 1;
    let left = false;
    return () => {
      if (left) return;
      left = true;
      this.waiting -= 1;
    };
  }
}
