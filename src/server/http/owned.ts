import type { RunQuotas } from '../../quotas/index.js';
import type { SendRequest, SessionInfo, SessionManager, StartRequest } from '../../sessions/index.js';
import { SessionLostError, SessionNotFoundError } from '../../sessions/index.js';
import type { Services } from '../services.js';
import type { SharedTrust } from './trust.js';

/** Which principal started each live session. */
type SessionOwners = Map<string, string>;

/** Lost sessions remembered per replica (the directory keeps answering for the others). */
const LOST_REMEMBERED = 1000;

/**
 * Where replicas (a postgres store) record their sessions: the shared session directory and the
 * other replicas' lists. Absent: one server, its sessions are all there is.
 */
export interface SessionRecords {
  /** A session started here: written before start_session answers, so any replica finds it at once. */
  started(session: { sessionId: string; principal: string; language: string }): Promise<void>;
  /** A session here ended, however it ended. */
  ended(sessionId: string): void;
  /** `principal`'s sessions on the other live replicas. */
  elsewhere(principal: string): Promise<SessionInfo[]>;
  /** How many sessions `principal` has open on the other live replicas (max_sessions counts them all). */
  openElsewhere(principal: string): Promise<number>;
}

/** What a principal's view of the sessions reads and writes besides the shared manager. */
interface Ledger {
  readonly owners: SessionOwners;
  /** Sessions whose replica is gone → the principal that owned them. */
  readonly lost: Map<string, string>;
  readonly records: SessionRecords | undefined;
  readonly quotas: RunQuotas | undefined;
}

/**
 * What serve --http keeps per principal across its per-request MCP servers, for the server's
 * life: which live sessions each one owns (an entry goes when its session ends, however it ends)
 * and what each one trusted (approve_trust_session: over HTTP "this connection" is the principal;
 * with a shared store, what it trusted through any live replica).
 */
export class Tenants {
  private readonly owners: SessionOwners = new Map();
  private readonly lost = new Map<string, string>();
  private readonly trust = new Map<string, Set<string>>();

  constructor(
    private readonly manager: SessionManager,
    private readonly records?: SessionRecords,
    private readonly shared?: SharedTrust,
  ) {
    manager.onSessionEnd((sessionId) => {
      this.owners.delete(sessionId);
      records?.ended(sessionId);
    });
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

  /** Whether a session runs here (whoever owns it: the view answers for it, not another replica). */
  isLocal(sessionId: string): boolean {
    return this.owners.has(sessionId);
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
  async listOwn(principal: string): Promise<SessionInfo[]> {
    const { sessions } = await this.manager.list();
    return sessions.filter((session) => this.owners.get(session.session_id) === principal);
  }

  /**
   * The services as one principal sees them: the same engine, pool and session manager as
   * everyone, but only its own REPL sessions and its own trust. Another principal's session id is
   * answered exactly like an unknown one (SESSION_NOT_FOUND), so ids reveal nothing;
   * list_sessions shows only its own (with replicas: on every live replica). A session whose
   * replica is gone is SESSION_LOST to its owner.
   */
  servicesFor(services: Services, principal: string): Services {
    const trusted = this.trustOf(principal);
    const ledger = { owners: this.owners, lost: this.lost, records: this.records, quotas: services.quotas };
    return { ...services, sessions: sessionsFor(this, services.sessions, ledger, principal), trusted };
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

function sessionsFor(
  tenants: Tenants,
  manager: SessionManager,
  { owners, lost, records, quotas }: Ledger,
  principal: string,
): SessionManager {
  const own = (sessionId: string) => {
    if (owners.get(sessionId) === principal) return;
    if (lost.get(sessionId) === principal) throw new SessionLostError(sessionId);
    throw new SessionNotFoundError(
      `no session ${sessionId}; list_sessions shows the running ones, start_session makes one`,
    );
  };
  const overrides: Partial<SessionManager> = {
    async start(request: StartRequest) {
      // max_sessions counts the principal's sessions on every live replica (the manager counts its own).
      if (records && quotas?.of(principal).max_sessions !== undefined) {
        const here = [...owners.values()].filter((owner) => owner === principal).length;
        quotas.assertSessionRoom(principal, here + (await records.openElsewhere(principal)));
      }
      const started = await manager.start(request);
      owners.set(started.session_id, principal);
      await records?.started({ sessionId: started.session_id, principal, language: started.language });
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
      const [here, elsewhere] = await Promise.all([
        tenants.listOwn(principal),
        records?.elsewhere(principal),
      ]);
      if (!elsewhere?.length) return { sessions: here };
      return { sessions: [...here, ...elsewhere].sort((a, b) => a.started_at.localeCompare(b.started_at)) };
    },
    writeStdin(sessionId: string, data: string, eof: boolean) {
      own(sessionId);
      return manager.writeStdin(sessionId, data, eof);
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
