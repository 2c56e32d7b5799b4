// The one builder of a SandboxSpec — runs, warm drivers, sessions, a pty's probe, install steps —
// and the one opener of a sandbox's egress lane: what a sandboxed program is given is decided here.
import { dirname } from 'node:path';
import {
  type Credentials,
  type HostRule,
  type LaneUser,
  type OpenedLane,
  openRunLane,
} from '../egress/index.js';
import { ForbiddenPathError } from '../errors/index.js';
import { sandboxEnv } from '../policy/index.js';
import type { Capabilities, EgressEndpoint, SandboxSpec } from '../sandbox/index.js';
import type { HeldDir } from '../util/index.js';

export interface SpecOptions {
  /** argv[0] is an absolute interpreter path. */
  readonly argv: readonly string[];
  /** Where the program starts. */
  readonly cwd: string;
  /** The program's environment, already stripped of the host's (codeEnv, or an installer's). */
  readonly env: Readonly<Record<string, string>>;
  /** Directories it may write, its own workspace first (a path given twice counts once). */
  readonly writable: readonly string[];
  /** Paths it must read besides them (a script, a driver, package trees). */
  readonly readable?: readonly string[];
  readonly limits: SandboxSpec['limits'];
  readonly network: SandboxSpec['network'];
  /** Where the sandbox reaches the egress proxy (network `allowlist`): a lane's socket dir is writable. */
  readonly egress?: EgressEndpoint | undefined;
  /** The caller's working directory, held by descriptor, when the program works in it (cwd). */
  readonly held?: HeldDir | undefined;
  /** Default 'ignore' (one-shot programs); drivers keep a pipe. */
  readonly stdin?: SandboxSpec['stdin'];
  readonly control?: boolean | undefined;
  readonly terminal?: boolean | undefined;
  readonly persistent?: SandboxSpec['persistent'] | undefined;
  /** The operator's mounts its principal is given (HeldMounts.of). */
  readonly mounts?: SandboxSpec['mounts'] | undefined;
}

/** The SandboxSpec of one sandboxed program. */
export function sandboxSpec(options: SpecOptions): SandboxSpec {
  const socket = options.egress?.socket;
  // The sandbox must reach its lane's socket: where it lies outside the paths given, it is added.
  const writable = new Set([...options.writable, ...(socket ? [dirname(socket)] : [])]);
  return {
    argv: options.argv,
    cwd: options.cwd,
    env: options.env,
    writablePaths: [...writable],
    readablePaths: [...(options.readable ?? []), ...(options.egress?.trust ?? [])],
    limits: options.limits,
    network: options.network,
    ...(options.egress && { egress: options.egress }),
    stdin: options.stdin ?? 'ignore',
    ...(options.control && { control: true }),
    ...(options.terminal && { terminal: true }),
    ...hostDirOf(options.held),
    ...(options.persistent && { persistent: options.persistent }),
    ...(options.mounts?.length && { mounts: options.mounts }),
  };
}

/**
 * The code's environment: the host's allowlisted variables, then `additions`; where the backend
 * gives code a home of its own (the host's is not there), HOME is the workspace.
 */
export function codeEnv(
  capabilities: Pick<Capabilities, 'ownHome'>,
  host: NodeJS.ProcessEnv,
  additions: Readonly<Record<string, string>>,
  workspace: string,
): Record<string, string> {
  return sandboxEnv(host, additions, capabilities.ownHome ? workspace : undefined);
}

/**
 * The spec's fields for a host directory (CODEXEC_ALLOWED_PATHS): its path, and for a root
 * server (runAs) the held descriptor the sandbox binds in its place, so what is at the path later
 * does not count. A directory already moved or replaced since it was opened refuses the run.
 */
export function hostDirOf(
  held: HeldDir | undefined,
): Pick<SandboxSpec, 'hostDir' | 'hostDirFd' | 'runAs'> | undefined {
  if (!held?.host) return undefined;
  if (!held.isAt(held.path))
    throw new ForbiddenPathError(`${held.path} was moved or replaced since the call named it`);
  const { runAs } = held.host;
  return { hostDir: held.path, ...(runAs && { runAs, hostDirFd: held.descriptor }) };
}

export interface LaneOptions {
  /** How the backend's sandboxes reach the proxy (its capability). */
  readonly egress: Capabilities['egress'];
  /** The sandbox's workspace (or a directory it may write): where a lane's socket goes. */
  readonly workspace: string;
  /** The Python that runs the sandbox's forwarder. */
  readonly python: () => Promise<string>;
  /** Whose rules the lane applies from the start (absent: nobody's, all refused, until use()). */
  readonly user?: LaneUser | undefined;
  /** The server's allowlist (CODEXEC_ALLOWED_DOMAINS): a loopback name it lists goes to the proxy. */
  readonly allowed?: readonly HostRule[];
  /** CODEXEC_CREDENTIALS, held: the lane swaps their placeholders; the sandbox gets them and the CA. */
  readonly credentials?: Credentials | undefined;
}

/** The egress lane of one sandbox (CODEXEC_NETWORK=allowlist), in the form its backend reaches. */
export async function openSandboxLane(options: LaneOptions): Promise<OpenedLane> {
  const opened = await openRunLane(
    options.workspace,
    options.egress,
    await options.python(),
    options.allowed,
    options.credentials,
  );
  if (options.user) opened.lane.use(options.user);
  return opened;
}
