import { ConfigError } from '../../errors/index.js';
import type { SessionInfo } from '../../sessions/index.js';
import {
  deriveKey,
  NonceLedger,
  type Postgres,
  ReplicaRegistry,
  type ReplicaRow,
  redactUrl,
  type SessionRow,
  SessionTable,
} from '../../store/index.js';
import { log } from '../../util/index.js';
import type { SessionRecords } from './owned.js';
import { ReplicaAuth } from './replica-auth.js';

/** Where a replica answers another's question "which sessions of this principal run here?". */
export const SESSIONS_PATH = '/replica/sessions';
/** How long a list_sessions waits for another replica's part before going without it. */
const LIST_TIMEOUT_MS = 5000;

/**
 * This server as one of several replicas over one PostgreSQL (serve --http, CODEXEC_STORE
 * postgres): its place in the registry, its rows in the session directory, the key requests
 * between replicas are signed with, and the other replicas' session lists.
 */
export class Replicas implements SessionRecords {
  readonly registry: ReplicaRegistry;
  readonly directory: SessionTable;
  readonly auth: ReplicaAuth;
  private stopped = false;

  constructor(
    private readonly store: Postgres,
    approvalKey: Uint8Array,
  ) {
    this.registry = new ReplicaRegistry(store);
    this.directory = new SessionTable(store);
    this.auth = new ReplicaAuth(deriveKey(approvalKey, 'replica'), this.registry.id, new NonceLedger(store));
  }

  get id(): string {
    return this.registry.id;
  }

  /** Register as reachable at `url` (after listening) and forget long-lost sessions. */
  async start(url: string): Promise<void> {
    try {
      await this.registry.start(url);
      await this.directory.prune();
    } catch (error) {
      // Exit 2 with a sentence: a replica nobody can find must not serve.
      throw new ConfigError(
        `CODEXEC_STORE: cannot register this replica in ${redactUrl(this.store.url)} (${(error as Error).message})`,
      );
    }
    log('info', `replica ${this.id} registered as ${url}`);
  }

  /** Leave the registry; this replica's sessions, about to be killed, are lost to the others. */
  async stop(): Promise<void> {
    this.stopped = true;
    await this.registry.stop();
    await this.directory
      .loseReplica(this.id)
      .catch((error: Error) => log('warn', `session directory: ${error.message}`));
  }

  async started(session: { sessionId: string; principal: string; language: string }): Promise<void> {
    // A session the directory misses still works through this replica; others answer SESSION_NOT_FOUND.
    await this.directory
      .add({ ...session, replicaId: this.id })
      .catch((error: Error) => log('warn', `session directory: ${session.sessionId}: ${error.message}`));
  }

  ended(sessionId: string): void {
    if (this.stopped) return; // stop() marked its rows lost: they answer SESSION_LOST for a while
    this.directory
      .remove(sessionId, this.id)
      .catch((error: Error) => log('warn', `session directory: ${sessionId}: ${error.message}`));
  }

  /** The directory's row for a session another replica runs, or undefined (unknown, or this replica's). */
  async elsewhereRecord(sessionId: string): Promise<SessionRow | undefined> {
    const record = await this.directory.find(sessionId);
    return record && record.replicaId !== this.id ? record : undefined;
  }

  /** The replica running `record`'s session while it is alive; undefined once it is gone. */
  async ownerOf(record: SessionRow): Promise<ReplicaRow | undefined> {
    return record.lost ? undefined : await this.registry.alive(record.replicaId);
  }

  async markLost(sessionId: string): Promise<void> {
    await this.directory
      .markLost(sessionId)
      .catch((error: Error) => log('warn', `session directory: ${sessionId}: ${error.message}`));
  }

  openElsewhere(principal: string): Promise<number> {
    return this.directory.countElsewhere(principal, this.id);
  }

  async elsewhere(principal: string): Promise<SessionInfo[]> {
    const owners = new Set(await this.directory.replicasOf(principal, this.id));
    if (owners.size === 0) return [];
    const live = (await this.registry.live()).filter((replica) => owners.has(replica.replicaId));
    const lists = await Promise.all(live.map((replica) => this.askSessions(replica, principal)));
    return lists.flat();
  }

  /** One replica's sessions of `principal` (none when it does not answer in time: it may be dying). */
  private async askSessions(replica: ReplicaRow, principal: string): Promise<SessionInfo[]> {
    const url = new URL(`${replica.url}${SESSIONS_PATH}`);
    const parts = { method: 'POST', path: `${url.pathname}${url.search}`, body: Buffer.alloc(0) };
    try {
      const answer = await fetch(url, {
        method: 'POST',
        headers: this.auth.sign(parts, principal, replica.replicaId),
        signal: AbortSignal.timeout(LIST_TIMEOUT_MS),
      });
      if (!answer.ok) throw new Error(`HTTP ${answer.status}`);
      const { sessions } = (await answer.json()) as { sessions?: unknown };
      if (!Array.isArray(sessions)) throw new Error('no session list in its answer');
      return sessions as SessionInfo[];
    } catch (error) {
      const { message, cause } = error as Error & { cause?: { code?: string } };
      const why = cause?.code ? `${message} (${cause.code})` : message;
      log('warn', `list_sessions: replica ${replica.replicaId} (${replica.url}) left out: ${why}`);
      return [];
    }
  }
}
