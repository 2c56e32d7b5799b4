import type { SessionDirectory, SessionInfo, SessionManager } from '../../sessions/index.js';
import { asPrincipal } from '../../util/index.js';
import type { Services } from '../services.js';
import type { SharedTrust } from './trust.js';

/** Lost sessions remembered per replica (the directory keeps answering for the others). */
const LOST_REMEMBERED = 1000;

/** Where replicas (a postgres store) record their sessions (the session manager's directory). */
export type SessionRecords = SessionDirectory;

/**
 * What serve --http keeps per principal across its per-request MCP servers, for the server's
 * life: what each one trusted (approve_trust_session: over HTTP "this connection" is the
 * principal; with a shared store, what it trusted through any live replica), and which sessions
 * of each were lost with their replica. Whose a session is, the session manager itself keeps and
 * checks on every call (the request's principal, bound when it arrived): nothing here wraps its
 * methods.
 */
export class Tenants {
  private readonly lost = new Map<string, string>();
  private readonly trust = new Map<string, Set<string>>();

  constructor(
    private readonly manager: SessionManager,
    records?: SessionRecords,
    private readonly shared?: SharedTrust,
  ) {
    if (records) manager.useDirectory(records, (sessionId, principal) => this.isLost(sessionId, principal));
  }

  /**
   * Before a request of `principal` is served: with a shared store, read what it trusted through
   * the other replicas (undefined, nothing to wait for, without one).
   */
  prepare(principal: string): Promise<void> | undefined {
    return this.shared?.refresh(principal, this.trustOf(principal));
  }

  /** The principal that started a live session here (the dashboard shows it to admins). */
  ownerOf(sessionId: string): string | undefined {
    return this.manager.ownerOf(sessionId);
  }

  /** Whether a session runs here (whoever owns it: this replica answers for it, not another). */
  isLocal(sessionId: string): boolean {
    return this.manager.isLocal(sessionId);
  }

  /** Whether this replica knows `principal`'s session to be lost. */
  isLost(sessionId: string, principal: string): boolean {
    return this.lost.get(sessionId) === principal;
  }

  /** `principal`'s session ran on a replica that is gone: its calls answer SESSION_LOST from now on. */
  markLost(sessionId: string, principal: string): void {
    this.lost.delete(sessionId);
    this.lost.set(sessionId, principal);
    if (this.lost.size > LOST_REMEMBERED) this.lost.delete(this.lost.keys().next().value as string);
  }

  /** `principal`'s sessions on this server only (what another replica asks for). */
  listOwn(principal: string): Promise<SessionInfo[]> {
    return asPrincipal(principal, () => this.manager.listHere());
  }

  /** The services with `principal`'s own trust: everything else is shared and checks the principal itself. */
  servicesFor(services: Services, principal: string): Services {
    return { ...services, trusted: this.trustOf(principal) };
  }

  private trustOf(principal: string): Set<string> {
    let trusted = this.trust.get(principal);
    if (!trusted) {
      trusted = this.shared ? this.shared.setFor(principal) : new Set();
      this.trust.set(principal, trusted);
    }
    return trusted;
  }
}
