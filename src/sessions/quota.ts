import { SessionLimitError } from './errors.js';

/**
 * The session limits: CODEXEC_MAX_SESSIONS for each principal, CODEXEC_MAX_SESSIONS_TOTAL for the
 * server. A session counts from the moment it is asked for (its driver may take a while to
 * start) until it ends, however it ends, so concurrent starts cannot overshoot either limit.
 */
export class SessionQuota {
  private readonly held = new Map<string, number>();
  private total = 0;
  /** The principal each live session counts against, by session id. */
  private readonly owners = new Map<string, string>();

  constructor(
    private readonly perPrincipal: number,
    private readonly overall: number,
  ) {}

  /** Count a session starting for `principal`, or throw LIMIT_REACHED naming the limit hit. */
  take(principal: string): SessionHold {
    const mine = this.held.get(principal) ?? 0;
    if (mine >= this.perPrincipal) {
      throw new SessionLimitError(
        `${mine} of your sessions are already running, the most one principal may run ` +
          `(CODEXEC_MAX_SESSIONS=${this.perPrincipal}); close one with close_session, or reuse one listed by ` +
          'list_sessions',
      );
    }
    if (this.total >= this.overall) {
      throw new SessionLimitError(
        `the server already runs ${this.total} sessions, the most it runs for all principals together ` +
          `(CODEXEC_MAX_SESSIONS_TOTAL=${this.overall}); close one of yours with close_session, or try again later`,
      );
    }
    this.held.set(principal, mine + 1);
    this.total += 1;
    return { principal, bound: false };
  }

  /** Sessions of `principal` counted now (starting or live). */
  heldBy(principal: string): number {
    return this.held.get(principal) ?? 0;
  }

  /** The session `hold` was taken for is registered as `sessionId`: its end frees the count. */
  bind(hold: SessionHold, sessionId: string): void {
    hold.bound = true;
    this.owners.set(sessionId, hold.principal);
  }

  /** A start is over: a hold never bound to a session (the start failed) is given back. */
  settle(hold: SessionHold): void {
    if (!hold.bound) this.give(hold.principal);
  }

  /** The principal a registered session belongs to. */
  ownerOf(sessionId: string): string | undefined {
    return this.owners.get(sessionId);
  }

  /** A registered session ended: its count is free again (unknown ids are ignored). */
  end(sessionId: string): void {
    const principal = this.owners.get(sessionId);
    if (principal === undefined) return;
    this.owners.delete(sessionId);
    this.give(principal);
  }

  private give(principal: string): void {
    const mine = (this.held.get(principal) ?? 1) - 1;
    if (mine > 0) this.held.set(principal, mine);
    else this.held.delete(principal);
    this.total -= 1;
  }
}

/** One session's count while it starts. */
export interface SessionHold {
  readonly principal: string;
  bound: boolean;
}
