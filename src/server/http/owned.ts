import type { SendRequest, SessionManager, StartRequest } from '../../sessions/index.js';
import { SessionNotFoundError } from '../../sessions/index.js';
import type { Services } from '../services.js';
import type { SharedTrust } from './trust.js';

/** Which principal started each live session. */
type SessionOwners = Map<string, string>;

/**
 * What serve --http keeps per principal across its per-request MCP servers, for the server's
 * life: which live sessions each one owns (an entry goes when its session ends, however it ends)
 * and what each one trusted (approve_trust_session: over HTTP "this connection" is the principal;
 * with a shared store, what it trusted through any live replica).
 */
export class Tenants {
  private readonly owners: SessionOwners = new Map();
  private readonly trust = new Map<string, Set<string>>();

  constructor(
    manager: SessionManager,
    private readonly shared?: SharedTrust,
  ) {
    manager.onSessionEnd((sessionId) => this.owners.delete(sessionId));
  }

  /**
   * Before a request of `principal` is served: with a shared store, read what it trusted through
   * the other replicas (undefined, nothing to wait for, without one).
   */
  prepare(principal: string): Promise<void> | undefined {
    return this.shared?.refresh(principal, this.trustOf(principal));
  }

  /** How many live sessions have an owner (for tests and health). */
  get ownedSessions(): number {
    return this.owners.size;
  }

  /** The principal that started a live session (the dashboard shows it to admins). */
  ownerOf(sessionId: string): string | undefined {
    return this.owners.get(sessionId);
  }

  /**
   * The services as one principal sees them: the same engine, pool and session manager as
   * everyone, but only its own REPL sessions and its own trust. Another principal's session id is
   * answered exactly like an unknown one (SESSION_NOT_FOUND), so ids reveal nothing;
   * list_sessions shows only its own.
   */
  servicesFor(services: Services, principal: string): Services {
    const trusted = this.trustOf(principal);
    return { ...services, sessions: sessionsFor(services.sessions, this.owners, principal), trusted };
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

function sessionsFor(manager: SessionManager, owners: SessionOwners, principal: string): SessionManager {
  const own = (sessionId: string) => {
    if (owners.get(sessionId) === principal) return;
    throw new SessionNotFoundError(
      `no session ${sessionId}; list_sessions shows the running ones, start_session makes one`,
    );
  };
  const overrides: Partial<SessionManager> = {
    async start(request: StartRequest) {
      const started = await manager.start(request);
      owners.set(started.session_id, principal);
      return started;
    },
    send(sessionId: string, request: SendRequest) {
      own(sessionId);
      return manager.send(sessionId, request);
    },
    async close(sessionId: string) {
      own(sessionId);
      return manager.close(sessionId);
    },
    async list() {
      const { sessions } = await manager.list();
      return { sessions: sessions.filter((session) => owners.get(session.session_id) === principal) };
    },
    processHost(sessionId: string) {
      own(sessionId);
      return manager.processHost(sessionId);
    },
    startProcess(sessionId: string, command: string) {
      own(sessionId);
      return manager.startProcess(sessionId, command);
    },
    describe(sessionId: string) {
      own(sessionId);
      return manager.describe(sessionId);
    },
    packageEnv(sessionId, language) {
      own(sessionId);
      return manager.packageEnv(sessionId, language);
    },
    recordPackageInstall(sessionId, name) {
      own(sessionId);
      manager.recordPackageInstall(sessionId, name);
    },
  };
  // A view, not a copy: anything not overridden is the shared manager's own method, bound to it,
  // so its state (counts, timers, the session limit) stays one for all principals.
  return new Proxy(manager, {
    get(target, property, receiver) {
      if (Object.hasOwn(overrides, property)) return overrides[property as keyof SessionManager];
      const value = Reflect.get(target, property, receiver);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}
