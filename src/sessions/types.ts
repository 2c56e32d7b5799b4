import type { z } from 'zod';
import type { BridgeRun } from '../bridge/index.js';
import type { Sampler, SamplingLimits } from '../codemode/index.js';
import type { CONNECTIONS, LaneUser, LoggedConnection } from '../egress/index.js';
import type { ResultImage } from '../engine/index.js';
import type {
  closeResultSchema,
  sendResultSchema,
  sessionInfoSchema,
  startResultSchema,
} from '../results/index.js';
import type { Language } from '../runtimes/index.js';
import type { HeldDir } from '../util/index.js';

/** Why a session ended, as written to `session_end`. */
export type EndReason = 'closed' | 'killed' | 'idle_timeout' | 'crashed' | 'server_shutdown' | 'disk_limit';

export interface StartRequest {
  readonly language: Language;
  readonly name?: string | undefined;
  /**
   * A host directory opened by policy (HostDirs), which the session holds from then on: it is
   * closed when the session ends or fails to start. Default: the session workspace `sandbox/sess_<id>/`.
   */
  readonly workingDir?: HeldDir | undefined;
  /** Code mode: the session's view of the bridge; its driver gets the helpers and a channel. */
  readonly bridge?: BridgeRun | undefined;
  /** Code mode with enable_sampling: the session's limits, over all its sends. */
  readonly sampling?: SamplingLimits | undefined;
  /** The egress allowlist narrowed for this session (start_session's `allowed_domains`). */
  readonly allowedDomains?: readonly string[] | undefined;
  /** bash only: run the driver on a pseudo-terminal (pty.ts); stdout and stderr arrive merged. */
  readonly pty?: boolean | undefined;
}

/**
 * A send: code to run; or, to a cell waiting for input (send_to_session's `input`, `interrupt`),
 * the answer or an interrupt.
 */
export type SendRequest = SendOptions &
  (
    | { readonly code: string; readonly input?: undefined; readonly interrupt?: undefined }
    | { readonly input: string; readonly code?: undefined; readonly interrupt?: undefined }
    | { readonly interrupt: true; readonly code?: undefined; readonly input?: undefined }
  );

export interface SendOptions {
  readonly timeoutMs?: number | undefined;
  readonly signal?: AbortSignal | undefined;
  /** Decoded output as it arrives during this send, for streaming to the client. */
  readonly onOutput?: ((stream: 'stdout' | 'stderr', text: string) => void) | undefined;
  /** Code mode with sampling: what answers this send's llm.* (made from the send's own request). */
  readonly sampler?: Sampler | undefined;
  /** The egress allowlist under approval `ask`: asks this send's client about a host off the list. */
  readonly askEgress?: LaneUser['ask'] | undefined;
}

export type StartResult = z.infer<ReturnType<typeof startResultSchema>>;

/**
 * One send's outcome: the wire's schema (results/), plus what never goes on the wire: each
 * picture's bytes (sent as image content) and the proxy's connections.
 */
export type SendResult = Omit<z.infer<ReturnType<typeof sendResultSchema>>, 'images'> & {
  images: ResultImage[];
  /** The egress allowlist: every connection of this send, for the audit (never sent). */
  [CONNECTIONS]?: LoggedConnection[];
};

export type CloseResult = z.infer<ReturnType<typeof closeResultSchema>>;

export type SessionInfo = z.infer<ReturnType<typeof sessionInfoSchema>>;

/**
 * Where replicas (a postgres store) record their sessions: the shared session directory and the
 * other replicas' lists. The session manager consults it; absent, its own sessions are all there are.
 */
export interface SessionDirectory {
  /** A session started here: written before start_session answers, so any replica finds it at once. */
  started(session: { sessionId: string; principal: string; language: string }): Promise<void>;
  /** A session here ended, however it ended. */
  ended(sessionId: string): void;
  /** `principal`'s sessions on the other live replicas. */
  elsewhere(principal: string): Promise<SessionInfo[]>;
  /** How many sessions `principal` has open on the other live replicas (max_sessions counts them all). */
  openElsewhere(principal: string): Promise<number>;
}
