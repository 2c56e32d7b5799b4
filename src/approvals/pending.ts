import { CodexecError } from '../errors/index.js';
import { LOCAL_PRINCIPAL } from '../util/index.js';

/**
 * CODEXEC_MAX_PENDING_APPROVALS: questions the server waits on at once, all connections together,
 * and CODEXEC_MAX_PENDING_APPROVALS_PER_PRINCIPAL: one principal's share of them, so that one
 * principal parking its calls cannot leave another none. Each one holds its call's code until
 * someone answers (up to CODEXEC_APPROVAL_TIMEOUT_MS), so past a bound a question is refused
 * LIMIT_REACHED at once instead of piling up in memory. A 2026-era plain call's question returns
 * input_required at once and holds nothing (the client's retry carries the answer), so it passes
 * through in microseconds.
 */
export class PendingApprovals {
  private waiting = 0;
  private readonly byPrincipal = new Map<string, number>();

  constructor(
    readonly max: number,
    readonly perPrincipal: number,
  ) {}

  get count(): number {
    return this.waiting;
  }

  /** Count one more pending question of `principal` (call the result when it is answered), or refuse. */
  enter(principal: string): () => void {
    if (this.waiting >= this.max) {
      throw new CodexecError(
        'LIMIT_REACHED',
        `${this.max} approvals are already waiting for an answer, the most the server holds ` +
          '(CODEXEC_MAX_PENDING_APPROVALS). Nothing ran; answer those first, then try again',
      );
    }
    const mine = this.byPrincipal.get(principal) ?? 0;
    // The local principal (stdio, the CLI, --no-auth) shares the server with nobody: no share to keep.
    if (principal !== LOCAL_PRINCIPAL && mine >= this.perPrincipal) {
      throw new CodexecError(
        'LIMIT_REACHED',
        `${mine} of your approvals are already waiting for an answer, the most one principal may have ` +
          '(CODEXEC_MAX_PENDING_APPROVALS_PER_PRINCIPAL). Nothing ran; wait for those answers, then try again',
      );
    }
    this.waiting += 1;
    this.byPrincipal.set(principal, mine + 1);
    let left = false;
    return () => {
      if (left) return;
      left = true;
      this.waiting -= 1;
      const now = (this.byPrincipal.get(principal) ?? 1) - 1;
      if (now === 0) this.byPrincipal.delete(principal);
      else this.byPrincipal.set(principal, now);
    };
  }
}
