// One live session as the manager keeps it: its driver (Session), the backend it runs in, and what
// it holds beside the driver for its life — code mode's channel and bridge, sampling's use, the
// egress lane and its record, the idle timer. The manager keeps one map of these; each is released
// once, when its session ends.
import { type BridgeRun, toolCallFields } from '../bridge/index.js';
import type { Channel, SamplingLimits, SamplingUse } from '../codemode/index.js';
import { CONNECTIONS, deniedOf, type EgressRecord, type Lane, loggedConnection } from '../egress/index.js';
import type { SandboxBackend } from '../sandbox/index.js';
import { isoTime } from '../util/index.js';
import { treeRssMb } from './memory.js';
import type { Session } from './session.js';
import type { SendRequest, SendResult, SessionInfo } from './types.js';

/** Code mode: the session's view of the bridge and the channel its driver talks on. */
export interface CodeMode {
  readonly channel: Channel;
  readonly bridge: BridgeRun;
  /** enable_sampling: the session's limits, over all its sends. */
  readonly sampling?: SamplingLimits | undefined;
}

/** The egress allowlist: the session's lane and the record of its connections. */
export interface SessionEgress {
  readonly lane: Lane;
  readonly record: EgressRecord;
}

export interface RecordParts {
  readonly session: Session;
  readonly backend: SandboxBackend;
  readonly workspace: string;
  readonly codeMode?: CodeMode | undefined;
  readonly egress?: SessionEgress | undefined;
  /** CODEXEC_SESSION_IDLE_TIMEOUT_MS. */
  readonly idleMs: number;
}

type ToolCalls = ReturnType<typeof toolCallFields>;

export class SessionRecord {
  private idleTimer: NodeJS.Timeout | undefined;
  /** Code mode: the tool calls of the latest send (sends to one session run in order). */
  private calls: ToolCalls | undefined;
  /** Where the current send began in the egress record. */
  private mark = 0;
  private readonly sampling: { readonly limits: SamplingLimits; readonly used: SamplingUse } | undefined;
  /** What install_package put in it, in order (list_sessions' packages_installed). */
  private readonly packages: string[] = [];
  private released = false;

  constructor(private readonly parts: RecordParts) {
    const limits = parts.codeMode?.sampling;
    this.sampling = limits && { limits, used: { rounds: 0, tokens: 0 } };
  }

  get id(): string {
    return this.parts.session.id;
  }

  get session(): Session {
    return this.parts.session;
  }

  get backend(): SandboxBackend {
    return this.parts.backend;
  }

  get workspace(): string {
    return this.parts.workspace;
  }

  get packagesInstalled(): readonly string[] {
    return this.packages;
  }

  addPackage(name: string): void {
    if (!this.packages.includes(name)) this.packages.push(name);
  }

  /** list_sessions' line of the session. */
  async info(): Promise<SessionInfo> {
    const { session } = this.parts;
    return {
      session_id: session.id,
      language: session.options.language,
      name: session.options.name,
      started_at: isoTime(session.startedAt),
      last_activity_at: isoTime(session.lastActivityAt),
      executions_count: session.executionsCount,
      pid: session.pid,
      memory_mb: (await treeRssMb(session.pid)) ?? null,
      packages_installed: [...this.packages],
      working_dir: session.options.cwd,
      busy: session.busy,
      waiting_for_input: session.waitingForInput,
      pty: session.options.pty === true,
    };
  }

  /** Code mode with sampling: the limits and what the sends used of them (each send's sampler reads it). */
  get samplingState(): { readonly limits: SamplingLimits; readonly used: SamplingUse } | undefined {
    return this.sampling;
  }

  /**
   * One send through the session: its llm.* go through its own request, its egress questions to its
   * own client; the result carries its tool calls and the connections it made.
   */
  send(request: SendRequest): Promise<SendResult> {
    const { session, codeMode, egress } = this.parts;
    this.clearIdle();
    codeMode?.channel.setSampler(request.sampler);
    if (egress) {
      this.mark = egress.record.size;
      egress.record.ask = request.askEgress;
    }
    return session
      .send(request)
      .then((result) => {
        const sent: SendResult = this.calls ? { ...result, ...this.calls } : result;
        if (!egress) return sent;
        const connections = egress.record.since(this.mark);
        const denied = deniedOf(connections);
        return {
          ...sent,
          ...(denied && { network_denied: denied }),
          [CONNECTIONS]: connections.map(loggedConnection),
        };
      })
      .finally(() => {
        codeMode?.channel.setSampler(undefined);
        if (egress) egress.record.ask = undefined;
        this.armIdle();
      });
  }

  /**
   * A send's log line: the session's entry, with the tool calls since the send before it (the bridge
   * keeps them all, in order; kept for the send's result) and the connections made meanwhile.
   */
  executionLine(entry: Record<string, unknown>): Record<string, unknown> {
    const log = this.parts.codeMode?.bridge.takeCalls();
    this.calls = log ? toolCallFields(log) : undefined;
    const network = this.parts.egress?.record.since(this.mark).map(loggedConnection);
    return { ...entry, ...this.calls, ...(network && { network }) };
  }

  /** A call about the session (its processes) is activity: its idle time starts again. */
  touch(): void {
    if (this.released) return;
    this.parts.session.touch();
    if (!this.parts.session.busy) this.armIdle();
  }

  /** Start the idle timer again: an idle session is killed, unless a send runs (it re-arms it). */
  armIdle(): void {
    if (this.released) return;
    this.clearIdle();
    const { session } = this.parts;
    this.idleTimer = setTimeout(() => {
      this.idleTimer = undefined;
      if (session.busy) return; // the send in flight re-arms the timer when it ends
      void session.kill('idle_timeout');
    }, this.parts.idleMs);
    this.idleTimer.unref();
  }

  /** The session has ended: no timer, no channel, no lane any more. */
  async release(): Promise<void> {
    this.released = true;
    this.clearIdle();
    this.calls = undefined;
    await Promise.all([this.parts.codeMode?.channel.close(), this.parts.egress?.lane.close()]);
  }

  private clearIdle(): void {
    clearTimeout(this.idleTimer);
    this.idleTimer = undefined;
  }
}
