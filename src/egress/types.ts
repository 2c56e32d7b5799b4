// The egress proxy's shapes: what a lane records, who it works for, and what its two handlers
// (tunnel.ts for CONNECT, forward.ts for absolute-form HTTP) share with the lane that runs them.
import type { Socket } from 'node:net';
import type { Credentials } from './credentials.js';
import type { EgressRules } from './rules.js';

/**
 * One CONNECT or one plain-HTTP request, as the lane decided it. None for what names no target
 * (a 400: unreadable, origin-form, a malformed host or port) nor while the lane has no user.
 */
export interface EgressConnection {
  /** Lowercase, as the client asked (a name or an IP literal, no brackets). */
  readonly host: string;
  readonly port: number;
  /** Whether the lane connected the client to the target. */
  readonly allowed: boolean;
  /** When refused, in words (from EgressRules' Decision or the proxy). */
  readonly reason?: string;
  /** The rule that decided, as written. */
  readonly rule?: string;
  /** LaneUser.ask decided: its answer is `allowed` (unless the address was refused after). */
  readonly asked?: true;
  /** The address connected to (allowed ones). */
  readonly address?: string;
  /** The lane's own answer when refused: 403 (rules, ask), 502 (resolution, connect), 503 (full). */
  readonly status?: 403 | 502 | 503;
  /** 'CONNECT' or the HTTP method of an absolute-form request. */
  readonly method: string;
  /** When the request reached the lane (ISO time). */
  readonly at: string;
}

/** Who a lane's connections are attributed to and checked for. */
export interface LaneUser {
  readonly rules: EgressRules;
  /** Called once per connection; a throw refuses that connection (it could not be accounted for). */
  record(connection: EgressConnection): void;
  /**
   * Asked, before any resolution, for a target the allowed list does not name (never for a denied
   * rule's, a call's narrowing's or an internal address's refusal): true lets it through. An
   * approved name still reaches public addresses only; an approved IP literal reaches itself (the
   * person saw the address). A rejection counts as false. `signal` aborts when the lane closes:
   * nobody waits for the answer any more.
   */
  ask?(host: string, port: number, signal?: AbortSignal): Promise<boolean>;
}

export interface Lane {
  /** The Unix socket's path, when opened on one. */
  readonly socket?: string;
  /** The loopback TCP port (127.0.0.1), when opened on one. */
  readonly port?: number;
  /** Who new connections are attributed to and checked for; undefined: every connection refused (403). */
  use(user: LaneUser | undefined): void;
  /** Stop listening, destroy every open tunnel and request, unlink the socket. Idempotent. */
  close(): Promise<void>;
}

/** A name's addresses; `dns.promises.lookup(name, { all: true })` unless a lane is given another. */
export type Resolve = (host: string) => Promise<readonly string[]>;

export interface LaneOptions {
  /** How names are resolved (a server with a resolver of its own; a test's rebinding name). */
  readonly resolve?: Resolve;
  /** How long a connection to one address may take (ms): 10 s. */
  readonly connectTimeout?: number;
  /** CODEXEC_CREDENTIALS: the placeholders it swaps and refuses (absent: none). */
  readonly credentials?: Credentials | undefined;
}

/** What a lane lends its handlers (tunnel.ts, forward.ts). */
export interface LaneContext {
  /** The user at the time of asking: a connection keeps the one it arrived under. */
  readonly user: LaneUser | undefined;
  readonly resolve: Resolve;
  readonly connectTimeout: number;
  /** CODEXEC_CREDENTIALS: the placeholders it swaps and refuses (absent: none). */
  readonly credentials?: Credentials | undefined;
  /** Aborted when the lane closes. */
  readonly signal: AbortSignal;
  /** A slot for one tunnel or request, released by the function returned; undefined when full. */
  acquire(): (() => void) | undefined;
  /** A socket the lane destroys when it closes. */
  track(socket: Socket): void;
}
