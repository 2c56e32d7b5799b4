// The sessions of a server: start (sandbox, packages, code mode's channel, the egress lane), send,
// close and kill, quotas, idle timers, and the per-session state each of those keeps. Over 400
// lines: every piece of that state must follow the session's life in one place (onEnd); the
// session itself, its processes, quotas, disk watch and packages live in files of their own.
import { mkdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { type BridgeRun, toolCallFields } from '../bridge/index.js';
import {
  type Channel,
  CODE_MODE_DIR,
  CODE_MODE_FILES,
  channelEnv,
  NODE_IMPORT,
  openChannel,
  type SamplingLimits,
  type SamplingUse,
} from '../codemode/index.js';
import type { Config } from '../config/index.js';
import type { DiskQuota } from '../disk/index.js';
import {
  CONNECTIONS,
  callRules,
  deniedOf,
  EgressRecord,
  type Lane,
  loggedConnection,
  openRunLane,
} from '../egress/index.js';
import { figureEnv, hostDirOf, PYTHON_SUPPORT_FILES } from '../engine/index.js';
import { InvalidInputError } from '../errors/index.js';
import type { LogWriter } from '../logs/index.js';
import type { SavedOutputs } from '../outputs/index.js';
import type { PackageEnv, PackageLanguage, SessionPackageHost } from '../packages/index.js';
import { type SecretsFilter, sandboxEnv } from '../policy/index.js';
import type { RunQuotas } from '../quotas/index.js';
import type { Interpreters } from '../runtimes/index.js';
import type { BackendRegistry, Exit, SandboxBackend } from '../sandbox/index.js';
import { currentPrincipal, HeldDir, log, newId } from '../util/index.js';
import { BASH_HOST_FILES, bashHostPython, hostArgv } from './bash-host.js';
import { watchSessionDisk } from './disk.js';
import { DRIVERS } from './drivers.js';
import { SessionLimitError, SessionLostError, SessionNotFoundError } from './errors.js';
import { treeRssMb } from './memory.js';
import { sessionPackageEnv, sessionPackages } from './packages.js';
import { type ProcessInfo, ProcessTable } from './processes.js';
import { assertPtyLanguage, PTY_RELAY, ptyArgv, ptyPython } from './pty.js';
import { type SessionHold, SessionQuota } from './quota.js';
import { describeExit, Session } from './session.js';
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

export interface SessionManagerDeps {
  readonly config: Config;
  readonly backends: BackendRegistry;
  readonly interpreters: Interpreters;
  readonly logs: LogWriter;
  readonly hostEnv?: NodeJS.ProcessEnv;
  /** Masks secrets in session output (absent: redaction off). */
  readonly secrets?: SecretsFilter | undefined;
  /** The disk bounds, shared with the engine (a principal's quota spans both). */
  readonly disk: DiskQuota;
  /** Keeps the whole output of a send the result truncates (absent: none kept). */
  readonly outputs?: SavedOutputs | undefined;
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
  private readonly sessions = new Map<string, Session>();
  /** The backend each session runs in: one with interpreters of its own installs its packages too. */
  private readonly backends = new Map<string, SandboxBackend>();
  private readonly idleTimers = new Map<string, NodeJS.Timeout>();
  /** Ended sessions: why, and whose (only its owner is told it ended; anyone else, that it is unknown). */
  private readonly ended = new Map<string, { readonly detail: string; readonly principal: string }>();
  /** Replicas: where the other replicas' sessions are found (absent: this server's are all there are). */
  private directory: SessionDirectory | undefined;
  /** Replicas: whether `principal`'s session ran on a replica that is gone (SESSION_LOST). */
  private isLost: (sessionId: string, principal: string) => boolean = () => false;
  private readonly endListeners: Array<(sessionId: string) => void> = [];
  /** Code mode: each such session's view of the bridge and the channel its driver talks on. */
  private readonly bridges = new Map<string, BridgeRun>();
  private readonly channels = new Map<string, Channel>();
  /** The tool calls of each code-mode session's latest send (sends to one session run in order). */
  private readonly sendCalls = new Map<string, ReturnType<typeof toolCallFields>>();
  /** Code mode with sampling: each such session's limits and what its sends used of them. */
  private readonly sampling = new Map<
    string,
    { readonly limits: SamplingLimits; readonly used: SamplingUse }
  >();
  /** The egress allowlist: each session's lane, its record, and where its current send began in it. */
  private readonly egress = new Map<string, { lane: Lane; record: EgressRecord; mark: number }>();
  private readonly quota: SessionQuota;
  private stopped = false;
  /** Background processes of sessions (start_process and the tools after it). */
  private readonly table: ProcessTable;

  constructor(private readonly deps: SessionManagerDeps) {
    this.quota = new SessionQuota(deps.config.maxSessions, deps.config.maxSessionsTotal);
    // Not awaited, as a send's line: LogWriter orders and reports writes.
    this.table = new ProcessTable(deps.config, deps.secrets, (id, entry) => {
      deps.logs.appendSession(id, entry).catch(() => {});
    });
  }

  /** Start `command` in the session's sandbox, in the background (processes.ts). */
  startProcess(sessionId: string, command: string): Promise<ProcessInfo> {
    const session = this.processHost(sessionId);
    this.touch(session);
    return this.table.start(session, currentPrincipal(), command);
  }

  /** The caller's live session that can run background processes, or the refusal to give. */
  processHost(sessionId: string): Session {
    const session = this.get(sessionId);
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
    if (!this.sessions.has(session.id)) return;
    session.lastActivityAt = new Date();
    if (!session.busy) this.armIdle(session);
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
    this.get(sessionId);
    return this.sampling.get(sessionId);
  }

  /** Code mode: the calls a session's send made (those since its previous send), kept for its result. */
  private newCalls(id: string): ReturnType<typeof toolCallFields> | undefined {
    const log = this.bridges.get(id)?.takeCalls();
    const calls = log && toolCallFields(log);
    if (calls) this.sendCalls.set(id, calls);
    else this.sendCalls.delete(id);
    return calls;
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
    const session = this.get(sessionId);
    this.deps.disk.assertRoom(currentPrincipal());
    this.clearIdle(sessionId);
    // This send's llm.* go through this send's own request.
    this.channels.get(sessionId)?.setSampler(request.sampler);
    const egress = this.egress.get(sessionId);
    if (egress) {
      egress.mark = egress.record.size;
      egress.record.ask = request.askEgress;
    }
    return session
      .send(request)
      .then((result) => {
        const calls = this.sendCalls.get(sessionId);
        const sent: SendResult = calls ? { ...result, ...calls } : result;
        if (!egress) return sent;
        const connections = egress.record.since(egress.mark);
        const denied = deniedOf(connections);
        return {
          ...sent,
          ...(denied && { network_denied: denied }),
          [CONNECTIONS]: connections.map(loggedConnection),
        };
      })
      .finally(() => {
        this.channels.get(sessionId)?.setSampler(undefined);
        if (egress) egress.record.ask = undefined;
        this.armIdle(session);
      });
  }

  /** write_stdin {session_id}: text to the session's stdin, at once, whatever it runs. */
  writeStdin(sessionId: string, data: string, eof: boolean): { session_id: string; bytes_written: number } {
    const session = this.get(sessionId);
    const bytes = Buffer.from(data, 'utf8');
    session.writeStdin(bytes, eof);
    return { session_id: session.id, bytes_written: bytes.length };
  }

  /** End a session now (SIGKILL, a send in progress too): `killed` by kill_session, else `closed`. */
  async close(sessionId: string, reason: 'closed' | 'killed' = 'closed'): Promise<CloseResult> {
    const session = this.get(sessionId);
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
    for (const session of this.sessions.values()) if (session.alive && !session.endReason) live++;
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
      [...this.sessions.values()]
        .filter((session) => session.alive && !session.endReason && include(session.id))
        .map(async (session) => ({
          session_id: session.id,
          language: session.options.language,
          name: session.options.name,
          started_at: session.startedAt.toISOString(),
          last_activity_at: session.lastActivityAt.toISOString(),
          executions_count: session.executionsCount,
          pid: session.pid,
          memory_mb: (await treeRssMb(session.pid)) ?? null,
          packages_installed: [...session.packagesInstalled],
          working_dir: session.options.cwd,
          busy: session.busy,
          waiting_for_input: session.waitingForInput,
          pty: session.options.pty === true,
        })),
    );
  }

  /** Record a package installed into a session (for list_sessions' packages_installed). */
  recordPackageInstall(sessionId: string, name: string): void {
    const session = this.get(sessionId);
    if (!session.packagesInstalled.includes(name)) session.packagesInstalled.push(name);
  }

  /** Where install_package puts a package for this session (its workspace's `.packages/`). */
  packageEnv(sessionId: string, language: PackageLanguage): PackageEnv {
    const session = this.get(sessionId);
    const kind =
      session.options.language === 'python'
        ? 'python'
        : session.options.language === 'bash'
          ? undefined
          : 'node';
    if (kind !== language) {
      throw new InvalidInputError(
        `session ${sessionId} is a ${session.options.language} session; it can only take ` +
          (kind ? `${kind} packages` : 'no packages (install globally by leaving out session_id)'),
      );
    }
    const workspace = join(this.deps.config.sandboxDir, sessionId);
    const env = sessionPackageEnv(workspace, kind);
    // A container's interpreter may not be the host's: its packages are installed by its image.
    const backend = this.backends.get(sessionId);
    return backend?.capabilities.ownInterpreters ? { ...env, sandbox: { backend, workspace } } : env;
  }

  /** Track an install for list_sessions and log it in the session's file. */
  async recordInstall(
    sessionId: string,
    install: { package: string; version: string | null; success: boolean },
  ): Promise<void> {
    // The caller's session, live or ended during the install (its log still gets the line).
    const whose = this.quota.ownerOf(sessionId) ?? this.ended.get(sessionId)?.principal;
    if (whose !== currentPrincipal()) throw unknownSession(sessionId);
    if (install.success && this.sessions.has(sessionId))
      this.recordPackageInstall(sessionId, install.package);
    await this.deps.logs.appendSession(sessionId, {
      type: 'package_install',
      session_id: sessionId,
      ...install,
      at: new Date().toISOString(),
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
    const session = this.get(sessionId);
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
    await Promise.all([...this.sessions.values()].map((session) => session.kill('server_shutdown')));
  }

  /**
   * The caller's session: every method that names a session finds it here, so none can forget
   * whose it is. Another principal's session, live or ended, is answered exactly as an unknown id
   * (SESSION_NOT_FOUND): ids reveal nothing. The principal is the request's (util/principal),
   * bound when the request arrived.
   */
  private get(sessionId: string): Session {
    const principal = currentPrincipal();
    const session = this.sessions.get(sessionId);
    const mine = session !== undefined && this.quota.ownerOf(sessionId) === principal;
    if (mine && session.alive && !session.endReason) return session;
    const tombstone = this.ended.get(sessionId);
    const ended =
      tombstone?.principal === principal ? tombstone.detail : mine ? session.endDetail : undefined;
    if (ended)
      throw new SessionNotFoundError(
        `session ${sessionId} has ended (${ended}); start a new one with start_session`,
      );
    if (this.isLost(sessionId, principal)) throw new SessionLostError(sessionId);
    throw unknownSession(sessionId);
  }

  /** The principal that started a live session here (the dashboard's admins see it). */
  ownerOf(anyId: string): string | undefined {
    return this.sessions.has(anyId) ? this.quota.ownerOf(anyId) : undefined;
  }

  /** Whether a session runs here, whoever's it is (a replica answers for it, not another). */
  isLocal(anyId: string): boolean {
    return this.sessions.has(anyId);
  }

  private async spawn(request: StartRequest, hold: SessionHold): Promise<StartResult> {
    const { config, logs } = this.deps;
    const driver = DRIVERS[request.language];
    const [backend, interpreter] = await Promise.all([
      this.deps.backends.get(),
      this.deps.interpreters.get(driver.interpreter),
    ]);
    // The egress allowlist: the session's rules (its allowed_domains narrow the server's).
    const record =
      config.network === 'allowlist' || request.allowedDomains
        ? new EgressRecord(callRules(config, request.allowedDomains))
        : undefined;
    const id = newId('sess');
    const workspace = join(config.sandboxDir, id);
    const cwd = request.workingDir?.path ?? workspace;
    await mkdir(workspace, { recursive: true, mode: 0o700 });
    const sandboxed = backend.capabilities.ownHome ? workspace : undefined;
    // A pty session: its sandbox must run the relay and give it a terminal (found out once).
    const pty =
      request.pty &&
      (await ptyPython(this.deps.interpreters, backend, {
        workspace,
        env: sandboxEnv(this.deps.hostEnv ?? process.env, {}, sandboxed),
        limits: config.limits,
      }).catch(async (error: unknown) => {
        await rm(workspace, { recursive: true, force: true });
        throw error;
      }));
    const opened =
      record &&
      (await openRunLane(
        workspace,
        backend.capabilities.egress,
        await this.deps.interpreters.get('python'),
      ).catch(async (error: unknown) => {
        await rm(workspace, { recursive: true, force: true });
        throw error;
      }));
    opened?.lane.use(record);
    const packages = await sessionPackages(config, driver.interpreter, workspace);
    // Python sends return their matplotlib figures (engine/images.ts).
    const python = driver.interpreter === 'python';
    // Code mode: the channel lives in the session's workspace for the session's life.
    const channel = request.bridge && (await openChannel(workspace, request.bridge));
    const runtimeEnv = {
      ...driver.env,
      ...packages.env,
      ...(python && figureEnv(workspace, packages.env.PYTHONPATH)),
    };
    if (channel && python)
      runtimeEnv.PYTHONPATH = [runtimeEnv.PYTHONPATH, CODE_MODE_DIR].filter(Boolean).join(':');
    const driverArgv = pty
      ? ptyArgv(backend.capabilities, pty, driver.argv(interpreter))
      : driver.argv(interpreter);
    // bash: its background processes are served by a host in front of the driver (bash-host.ts).
    const host = request.language === 'bash' ? await bashHostPython(this.deps.interpreters) : undefined;
    const argv = host ? hostArgv(host, driverArgv) : driverArgv;
    const proc = backend.spawn({
      argv: channel && !python ? [argv[0] as string, ...NODE_IMPORT, ...argv.slice(1)] : argv,
      cwd,
      ...hostDirOf(request.workingDir),
      env: sandboxEnv(
        this.deps.hostEnv ?? process.env,
        { ...runtimeEnv, ...channelEnv(channel), ...opened?.env },
        sandboxed,
      ),
      writablePaths: cwd === workspace ? [workspace] : [workspace, cwd],
      readablePaths: [
        driver.file,
        ...(pty ? [PTY_RELAY] : []),
        ...(host ? BASH_HOST_FILES : []),
        ...packages.readable,
        ...(python ? PYTHON_SUPPORT_FILES : []),
        ...(channel ? CODE_MODE_FILES : []),
      ],
      limits: config.limits,
      network: config.network,
      ...(opened && { egress: opened.endpoint }),
      stdin: 'pipe',
      control: true,
      ...(pty && { terminal: true }),
    });
    // Held from here for the session's life; a caller's is start_session's until this point.
    const dir = request.workingDir ?? HeldDir.ofOwn(workspace);
    const session = new Session(proc, {
      id,
      language: request.language,
      name: request.name ?? null,
      cwd,
      dir,
      workspace,
      ...(python && { figuresWorkspace: workspace }),
      config,
      sandboxMode: backend.mode,
      pty: Boolean(pty),
      hostsProcesses: request.language !== 'bash' || host !== undefined,
      secrets: this.deps.secrets,
      outputs: this.deps.outputs,
      onExecution: (entry) => {
        // Code mode: the calls since the send before this one (the bridge keeps them all, in order).
        const calls = this.newCalls(id);
        const egress = this.egress.get(id);
        const network = egress?.record.since(egress.mark).map(loggedConnection);
        // Not awaited: the reply should not wait for the disk; LogWriter orders and reports writes.
        logs.appendSession(id, { ...entry, ...calls, ...(network && { network }) }).catch(() => {});
      },
      onProcess: (event) => this.table.onEvent(session, event),
      onEnd: (ended, exit) => {
        unwatch();
        this.table.sessionEnded(ended, backend.capabilities.processesOutlive);
        dir.close();
        return this.onEnd(ended, exit, workspace);
      },
    });
    const unwatch = watchSessionDisk(this.deps.disk, workspace, currentPrincipal(), session);
    try {
      await session.ready();
      // The server began to stop while this driver was starting: nobody else will kill it.
      if (this.stopped) {
        await session.kill('server_shutdown');
        throw new SessionLimitError('the server is shutting down; no new sessions');
      }
    } catch (error) {
      dir.close();
      await Promise.all([channel?.close(), opened?.lane.close()]);
      await rm(workspace, { recursive: true, force: true });
      throw error;
    }
    this.sessions.set(id, session);
    this.backends.set(id, backend);
    if (opened && record) this.egress.set(id, { lane: opened.lane, record, mark: 0 });
    this.quota.bind(hold, id);
    if (channel && request.bridge) {
      this.channels.set(id, channel);
      this.bridges.set(id, request.bridge);
      if (request.sampling)
        this.sampling.set(id, { limits: request.sampling, used: { rounds: 0, tokens: 0 } });
    }
    this.armIdle(session);
    const started_at = session.startedAt.toISOString();
    await logs.appendSession(id, {
      type: 'session_start',
      session_id: id,
      language: request.language,
      name: request.name ?? null,
      pid: session.pid,
      agent_id: null,
      working_dir: cwd,
      sandbox_mode: backend.mode,
      ...(pty && { pty: true }),
      started_at,
    });
    return {
      success: true,
      session_id: id,
      language: request.language,
      name: request.name ?? null,
      pid: session.pid,
      started_at,
      working_dir: cwd,
      sandbox_mode: backend.mode,
    };
  }

  private async onEnd(session: Session, exit: Exit, workspace: string): Promise<void> {
    if (this.sessions.get(session.id) !== session) return; // never registered: start-up failed
    const owner = this.quota.ownerOf(session.id);
    this.sessions.delete(session.id);
    this.quota.end(session.id);
    this.clearIdle(session.id);
    this.bridges.delete(session.id);
    this.backends.delete(session.id);
    this.sendCalls.delete(session.id);
    this.sampling.delete(session.id);
    await Promise.all([this.channels.get(session.id)?.close(), this.egress.get(session.id)?.lane.close()]);
    this.channels.delete(session.id);
    this.egress.delete(session.id);
    for (const listener of this.endListeners) listener(session.id);
    const reason: EndReason = session.endReason ?? 'crashed';
    this.ended.set(session.id, { detail: session.endDetail, principal: owner ?? '' });
    if (this.ended.size > TOMBSTONES) this.ended.delete(this.ended.keys().next().value as string);
    if (reason === 'crashed') log('warn', `session ${session.id} ended unexpectedly (${describeExit(exit)})`);
    // Clean up first, so a session_end line means the session is entirely gone.
    await rm(workspace, { recursive: true, force: true }).catch((error: Error) =>
      log('warn', `could not remove session workspace ${workspace}: ${error.message}`),
    );
    await this.deps.logs
      .appendSession(session.id, {
        type: 'session_end',
        session_id: session.id,
        reason,
        total_duration_ms: Date.now() - session.startedAt.getTime(),
        executions_count: session.executionsCount,
        exit_code: exit.code,
        signal: exit.signal,
        at: new Date().toISOString(),
      })
      .catch(() => {}); // LogWriter has reported it
  }

  private armIdle(session: Session): void {
    if (!this.sessions.has(session.id)) return;
    this.clearIdle(session.id);
    const timer = setTimeout(() => {
      this.idleTimers.delete(session.id);
      if (session.busy) return; // the send in flight re-arms the timer when it ends
      void session.kill('idle_timeout');
    }, this.deps.config.sessionIdleTimeoutMs);
    timer.unref();
    this.idleTimers.set(session.id, timer);
  }

  private clearIdle(id: string): void {
    clearTimeout(this.idleTimers.get(id));
    this.idleTimers.delete(id);
  }
}

function unknownSession(sessionId: string): SessionNotFoundError {
  return new SessionNotFoundError(
    `no session ${sessionId}; list_sessions shows the running ones, start_session makes one`,
  );
}
