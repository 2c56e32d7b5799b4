// The sessions of a server: one record per live session (record.ts), started in stages (start.ts),
// found for its owner only, sent to, listed, closed and killed, within the quotas; its end logged.
import type { SamplingLimits, SamplingUse } from '../codemode/index.js';
import type { EngineDeps } from '../engine/index.js';
import { InvalidInputError } from '../errors/index.js';
import type { PackageEnv, PackageLanguage, SessionPackageHost } from '../packages/index.js';
import type { RunQuotas } from '../quotas/index.js';
import type { Language } from '../runtimes/index.js';
import type { Exit } from '../sandbox/index.js';
import { currentPrincipal, type HeldDir, isoTime, log } from '../util/index.js';
import { SessionLimitError, SessionLostError, SessionNotFoundError } from './errors.js';
import { announce, closeOut } from './lines.js';
import { sessionPackageEnv } from './packages.js';
import { type ProcessInfo, ProcessTable } from './processes.js';
import { assertPtyLanguage } from './pty.js';
import { type SessionHold, SessionQuota } from './quota.js';
import { SessionRecord } from './record.js';
import { describeExit } from './send-result.js';
import type { Session } from './session.js';
import { gatherExtras, placeSession, type StartDeps, startDriver } from './start.js';
import type {
  CloseResult,
  EndReason,
  SendRequest,
  SendResult,
  SessionDirectory,
  SessionInfo,
  StartRequest,
  StartResult,
} from './types.js';

/** What the engine is built from (sessions share its disk bounds, secrets filter and saved outputs). */
export interface SessionManagerDeps extends Omit<EngineDeps, 'codeMode'> {
  /** CODEXEC_QUOTAS: a principal's max_sessions, over CODEXEC_MAX_SESSIONS (absent: none). */
  readonly quotas?: RunQuotas | undefined;
}

/** How many ended sessions are remembered, to say why a late send finds nothing. */
const TOMBSTONES = 200;

/**
 * Owns every session: start (within CODEXEC_MAX_SESSIONS per principal and _TOTAL in all), send,
 * close, list, idle kill, lifecycle log, workspace removal, and killing them all when the server
 * stops.
 */
export class SessionManager implements SessionPackageHost {
  /** Every live session here: one record each, holding what the session holds. */
  private readonly records = new Map<string, SessionRecord>();
  /** Ended sessions: why, and whose (only its owner is told it ended; anyone else, that it is unknown). */
  private readonly ended = new Map<string, { readonly detail: string; readonly principal: string }>();
  /** Replicas: where the other replicas' sessions are found (absent: this server's are all there are). */
  private directory: SessionDirectory | undefined;
  /** Replicas: whether `principal`'s session ran on a replica that is gone (SESSION_LOST). */
  private isLost: (sessionId: string, principal: string) => boolean = () => false;
  private readonly endListeners: Array<(sessionId: string) => void> = [];
  private readonly quota: SessionQuota;
  private stopped = false;
  /** Background processes of sessions (start_process and the tools after it). */
  private readonly table: ProcessTable;
  private readonly starting: StartDeps;

  constructor(private readonly deps: SessionManagerDeps) {
    this.quota = new SessionQuota(deps.config.maxSessions, deps.config.maxSessionsTotal);
    // Not awaited, as a send's line: LogWriter orders and reports writes.
    this.table = new ProcessTable(deps.config, deps.secrets, (id, entry) => {
      deps.logs.appendSession(id, entry).catch(() => {});
    });
    this.starting = { ...deps, hostEnv: deps.hostEnv ?? process.env };
  }

  /** Start `command` in the session's sandbox, in the background (processes.ts). */
  startProcess(sessionId: string, command: string, exposePort?: number): Promise<ProcessInfo> {
    const session = this.processHost(sessionId);
    this.touch(session);
    return this.table.start(session, currentPrincipal(), command, exposePort);
  }

  /** The socket `principal`'s session serves an exposed port on (serve --http's /p/ route). */
  exposedPort(principal: string, sessionId: string, port: number): string | undefined {
    return this.isLocal(sessionId) ? this.table.exposed(principal, sessionId, port) : undefined;
  }

  /** The caller's live session that can run background processes, or the refusal to give. */
  processHost(sessionId: string): Session {
    const { session } = this.get(sessionId);
    ProcessTable.assertHost(session);
    return session;
  }

  readProcess(processId: string, offset: number): ReturnType<ProcessTable['read']> {
    const principal = currentPrincipal();
    this.touch(this.table.sessionOf(principal, processId));
    return this.table.read(principal, processId, offset);
  }

  writeProcess(processId: string, data: string, eof: boolean): ReturnType<ProcessTable['write']> {
    const principal = currentPrincipal();
    this.touch(this.table.sessionOf(principal, processId));
    return this.table.write(principal, processId, data, eof);
  }

  killProcess(processId: string): Promise<ProcessInfo> {
    const principal = currentPrincipal();
    this.touch(this.table.sessionOf(principal, processId));
    return this.table.kill(principal, processId);
  }

  listProcesses(): { processes: ProcessInfo[] } {
    return { processes: this.table.list(currentPrincipal()) };
  }

  /** A call about a session's processes is the session's activity: its idle time starts again. */
  private touch(session: Session): void {
    const record = this.records.get(session.id);
    if (record?.session === session) record.touch();
  }

  /**
   * Replicas (a postgres store): the directory of every replica's sessions. A session is then
   * recorded there before start_session answers, max_sessions counts the principal's on every
   * live replica, list() shows them all, and a session of a replica that is gone is SESSION_LOST.
   */
  useDirectory(directory: SessionDirectory, isLost: (sessionId: string, principal: string) => boolean): void {
    this.directory = directory;
    this.isLost = isLost;
    this.onSessionEnd((sessionId) => directory.ended(sessionId));
  }

  async start(request: StartRequest): Promise<StartResult> {
    if (this.stopped) throw new SessionLimitError('the server is shutting down; no new sessions');
    if (request.pty) assertPtyLanguage(request.language);
    const principal = currentPrincipal();
    this.deps.disk.assertRoom(principal);
    const quotas = this.deps.quotas;
    if (quotas) {
      const here = this.quota.heldBy(principal);
      const counted = this.directory && quotas.of(principal).max_sessions !== undefined;
      quotas.assertSessionRoom(
        principal,
        counted ? here + ((await this.directory?.openElsewhere(principal)) ?? 0) : here,
      );
    }
    const hold = this.quota.take(principal); // LIMIT_REACHED naming the limit hit
    let started: StartResult;
    try {
      started = await this.spawn(request, hold);
    } finally {
      this.quota.settle(hold);
    }
    await this.directory?.started({ sessionId: started.session_id, principal, language: started.language });
    return started;
  }

  /** Code mode: a sampling session's limits and use (each send makes its sampler from them). */
  samplingOf(sessionId: string): { readonly limits: SamplingLimits; readonly used: SamplingUse } | undefined {
    return this.get(sessionId).samplingState;
  }

  /** Call `listener` with the id of every session that ends, however it ends (close, idle, crash). */
  onSessionEnd(listener: (sessionId: string) => void): void {
    this.endListeners.push(listener);
  }

  send(sessionId: string, request: SendRequest): Promise<SendResult> {
    const bytes = Buffer.byteLength(request.code ?? request.input ?? '', 'utf8');
    if (bytes > this.deps.config.maxCodeBytes) {
      const what = request.code !== undefined ? 'code' : 'input';
      throw new InvalidInputError(
        `${what} is ${bytes} bytes; the limit is ${this.deps.config.maxCodeBytes} (CODEXEC_MAX_CODE_BYTES)`,
      );
    }
    const record = this.get(sessionId);
    this.deps.disk.assertRoom(currentPrincipal());
    return record.send(request);
  }

  /** write_stdin {session_id}: text to the session's stdin, at once, whatever it runs. */
  writeStdin(sessionId: string, data: string, eof: boolean): { session_id: string; bytes_written: number } {
    const { session } = this.get(sessionId);
    const bytes = Buffer.from(data, 'utf8');
    session.writeStdin(bytes, eof);
    return { session_id: session.id, bytes_written: bytes.length };
  }

  /** End a session now (SIGKILL, a send in progress too): `killed` by kill_session, else `closed`. */
  async close(sessionId: string, reason: 'closed' | 'killed' = 'closed'): Promise<CloseResult> {
    const { session } = this.get(sessionId);
    await session.kill(reason);
    return {
      success: true,
      session_id: session.id,
      duration_total_ms: Date.now() - session.startedAt.getTime(),
      executions_count: session.executionsCount,
    };
  }

  /** Live sessions of every principal (the metrics' gauge). */
  liveCount(): number {
    let live = 0;
    for (const { session } of this.records.values()) if (session.alive && !session.endReason) live++;
    return live;
  }

  /** The caller's sessions: here, and with replicas on every live one, oldest first. */
  async list(): Promise<{ sessions: SessionInfo[] }> {
    const principal = currentPrincipal();
    const [here, elsewhere] = await Promise.all([this.listHere(), this.directory?.elsewhere(principal)]);
    if (!elsewhere?.length) return { sessions: here };
    return { sessions: [...here, ...elsewhere].sort((a, b) => a.started_at.localeCompare(b.started_at)) };
  }

  /** The caller's sessions on this server only (what another replica asks for). */
  listHere(): Promise<SessionInfo[]> {
    const principal = currentPrincipal();
    return this.describeLive((id) => this.quota.ownerOf(id) === principal);
  }

  /** Every live session here, whoever's, with its principal: for the dashboard's admins only. */
  async listEveryone(): Promise<Array<SessionInfo & { principal: string | null }>> {
    const sessions = await this.describeLive(() => true);
    return sessions.map((info) => ({ ...info, principal: this.quota.ownerOf(info.session_id) ?? null }));
  }

  private describeLive(include: (sessionId: string) => boolean): Promise<SessionInfo[]> {
    return Promise.all(
      [...this.records.values()]
        .filter(({ session }) => session.alive && !session.endReason && include(session.id))
        .map((record) => record.info()),
    );
  }

  /** Record a package installed into a session (for list_sessions' packages_installed). */
  recordPackageInstall(sessionId: string, name: string): void {
    this.get(sessionId).addPackage(name);
  }

  /** Where install_package puts a package for this session (its workspace's `.packages/`). */
  packageEnv(sessionId: string, language: PackageLanguage): PackageEnv {
    const { session, backend, workspace } = this.get(sessionId);
    const kind = packageKind(session.options.language);
    if (kind !== language) {
      throw new InvalidInputError(
        `session ${sessionId} is a ${session.options.language} session; it can only take ` +
          (kind ? `${kind} packages` : 'no packages (install globally by leaving out session_id)'),
      );
    }
    const env = sessionPackageEnv(workspace, kind);
    // A container's interpreter may not be the host's: its packages are installed by its image.
    return backend.capabilities.ownInterpreters ? { ...env, sandbox: { backend, workspace } } : env;
  }

  /** Track an install for list_sessions and log it in the session's file. */
  async recordInstall(
    sessionId: string,
    install: { package: string; version: string | null; success: boolean },
  ): Promise<void> {
    // The caller's session, live or ended during the install (its log still gets the line).
    const whose = this.quota.ownerOf(sessionId) ?? this.ended.get(sessionId)?.principal;
    if (whose !== currentPrincipal()) throw unknownSession(sessionId);
    if (install.success && this.records.has(sessionId)) this.recordPackageInstall(sessionId, install.package);
    await this.deps.logs.appendSession(sessionId, {
      type: 'package_install',
      session_id: sessionId,
      ...install,
      at: isoTime(),
    });
  }

  /**
   * The working directory (its path, and the directory itself held by descriptor: where file tools
   * start), language and sandbox of a live session.
   */
  describe(sessionId: string): {
    language: string;
    workingDir: string;
    dir: HeldDir;
    pid: number;
    sandboxMode: string;
  } {
    const { session } = this.get(sessionId);
    return {
      language: session.options.language,
      workingDir: session.options.cwd,
      dir: session.options.dir,
      pid: session.pid,
      sandboxMode: session.options.sandboxMode,
    };
  }

  /** Kill every session and wait until each end is logged and its workspace removed. */
  async shutdown(): Promise<void> {
    this.stopped = true;
    await Promise.all([...this.records.values()].map(({ session }) => session.kill('server_shutdown')));
  }

  /**
   * The caller's session: every method that names a session finds it here, so none can forget
   * whose it is. Another principal's session, live or ended, is answered exactly as an unknown id
   * (SESSION_NOT_FOUND): ids reveal nothing. The principal is the request's (util/principal),
   * bound when the request arrived.
   */
  private get(sessionId: string): SessionRecord {
    const principal = currentPrincipal();
    const record = this.records.get(sessionId);
    const mine = record !== undefined && this.quota.ownerOf(sessionId) === principal;
    if (mine && record.session.alive && !record.session.endReason) return record;
    const tombstone = this.ended.get(sessionId);
    const ended =
      tombstone?.principal === principal ? tombstone.detail : mine ? record.session.endDetail : undefined;
    if (ended)
      throw new SessionNotFoundError(
        `session ${sessionId} has ended (${ended}); start a new one with start_session`,
      );
    if (this.isLost(sessionId, principal)) throw new SessionLostError(sessionId);
    throw unknownSession(sessionId);
  }

  /** The principal that started a live session here (the dashboard's admins see it). */
  ownerOf(anyId: string): string | undefined {
    return this.records.has(anyId) ? this.quota.ownerOf(anyId) : undefined;
  }

  /** Whether a session runs here, whoever's it is (a replica answers for it, not another). */
  isLocal(anyId: string): boolean {
    return this.records.has(anyId);
  }

  private async spawn(request: StartRequest, hold: SessionHold): Promise<StartResult> {
    const place = await placeSession(this.starting, request);
    const extras = await gatherExtras(this.starting, request, place);
    const { id, backend } = place;
    const session = await startDriver(this.starting, request, place, extras, {
      // Not awaited: the reply should not wait for the disk; LogWriter orders and reports writes.
      onExecution: (entry) =>
        void this.deps.logs
          .appendSession(id, this.records.get(id)?.executionLine(entry) ?? entry)
          .catch(() => {}),
      onProcess: (ended, event) => this.table.onEvent(ended, event),
      processesEnd: (ended) => this.table.sessionEnded(ended, backend.capabilities.processesOutlive),
      onEnd: (ended, exit) => this.onEnd(ended, exit),
      stopped: () => this.stopped,
    });
    const { channel, lane } = extras;
    const record = new SessionRecord({
      session,
      backend,
      workspace: place.workspace,
      codeMode: channel && request.bridge && { channel, bridge: request.bridge, sampling: request.sampling },
      egress: lane && place.rules && { lane: lane.lane, record: place.rules },
      idleMs: this.deps.config.sessionIdleTimeoutMs,
    });
    this.records.set(id, record);
    this.quota.bind(hold, id);
    record.armIdle();
    return announce(this.deps.logs, request, session, {
      sandbox_mode: backend.mode,
      pty: Boolean(extras.pty),
    });
  }

  private async onEnd(session: Session, exit: Exit): Promise<void> {
    const record = this.records.get(session.id);
    if (record?.session !== session) return; // never registered: start-up failed
    const owner = this.quota.ownerOf(session.id);
    this.records.delete(session.id);
    this.quota.end(session.id);
    await record.release();
    for (const listener of this.endListeners) listener(session.id);
    const reason: EndReason = session.endReason ?? 'crashed';
    this.ended.set(session.id, { detail: session.endDetail, principal: owner ?? '' });
    if (this.ended.size > TOMBSTONES) this.ended.delete(this.ended.keys().next().value as string);
    if (reason === 'crashed') log('warn', `session ${session.id} ended unexpectedly (${describeExit(exit)})`);
    await closeOut(this.deps.logs, session, { exit, reason, workspace: record.workspace });
  }
}

/** The packages a session of `language` takes (bash: none). */
function packageKind(language: Language): PackageLanguage | undefined {
  return language === 'python' ? 'python' : language === 'bash' ? undefined : 'node';
}

function unknownSession(sessionId: string): SessionNotFoundError {
  return new SessionNotFoundError(
    `no session ${sessionId}; list_sessions shows the running ones, start_session makes one`,
  );
}
