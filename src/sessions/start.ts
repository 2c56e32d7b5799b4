// Starting a session, in stages: its place (backend, interpreter, workspace, egress rules), what
// its driver needs beside the sandbox (a pty's relay, the egress lane, packages, code mode's
// channel, bash's process host), the driver's spec, and the driver itself, ready. The manager
// registers what comes out; a stage that fails releases what the stages before it made.
import { mkdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import {
  type Channel,
  CODE_MODE_DIR,
  CODE_MODE_FILES,
  channelEnv,
  NODE_IMPORT,
  openChannel,
} from '../codemode/index.js';
import type { Config } from '../config/index.js';
import type { DiskQuota } from '../disk/index.js';
import { type Credentials, callRules, EgressRecord, type OpenedLane } from '../egress/index.js';
import {
  codeEnv,
  figureEnv,
  type HeldMounts,
  namedLimits,
  openSandboxLane,
  type PackageAccess,
  PYTHON_SUPPORT_FILES,
  sandboxSpec,
} from '../engine/index.js';
import type { SavedOutputs } from '../outputs/index.js';
import type { SecretsFilter } from '../policy/index.js';
import type { Interpreters } from '../runtimes/index.js';
import {
  type BackendRegistry,
  type Exit,
  FORWARDER,
  type SandboxBackend,
  type SandboxSpec,
} from '../sandbox/index.js';
import { currentPrincipal, HeldDir, newId, packagePath } from '../util/index.js';
import { BASH_HOST_FILES, bashHostPython, hostArgv } from './bash-host.js';
import { watchSessionDisk } from './disk.js';
import { DRIVERS, type DriverSpec } from './drivers.js';
import { SessionLimitError } from './errors.js';
import { sessionPackages } from './packages.js';
import type { ProcEvent } from './protocol.js';
import { PTY_RELAY, ptyArgv, ptyPython } from './pty.js';
import { Session } from './session.js';
import type { StartRequest } from './types.js';

/** A node session's port forwarder (start_process expose_port): its sandbox may have no Python. */
const PORT_FORWARD_NODE = packagePath('drivers', 'port_forward.mjs');

export interface StartDeps {
  readonly config: Config;
  readonly backends: BackendRegistry;
  readonly interpreters: Interpreters;
  readonly hostEnv: NodeJS.ProcessEnv;
  readonly disk: DiskQuota;
  readonly secrets?: SecretsFilter | undefined;
  readonly outputs?: SavedOutputs | undefined;
  /** CODEXEC_CREDENTIALS, held: a session's lane swaps their placeholders. */
  readonly credentials?: Credentials | undefined;
  /** The operator's mounts (CODEXEC_MOUNTS): the principal's are bound into its sessions. */
  readonly mounts?: HeldMounts | undefined;
}

/** Where a session lives and what it runs, before anything is started. */
export interface Place {
  readonly id: string;
  readonly backend: SandboxBackend;
  readonly driver: DriverSpec;
  readonly interpreter: string;
  readonly workspace: string;
  /** Where the driver starts: the caller's working directory, else the workspace. */
  readonly cwd: string;
  /** The egress allowlist: the session's rules (its allowed_domains narrow the server's). */
  readonly rules: EgressRecord | undefined;
}

/** What the driver needs beside its sandbox. */
export interface Extras {
  /** A pty session: the python3 that runs its relay. */
  readonly pty: string | undefined;
  readonly lane: OpenedLane | undefined;
  readonly packages: PackageAccess;
  /** Code mode: the channel lives in the session's workspace for the session's life. */
  readonly channel: Channel | undefined;
  /** bash: the python3 of the host that serves its background processes (bash-host.ts). */
  readonly host: string | undefined;
}

/** What the manager is told of a started driver's life. */
export interface DriverHooks {
  onExecution(entry: Record<string, unknown>): void;
  onProcess(session: Session, event: ProcEvent): void;
  /** The driver's sandbox is gone: its background processes go too (before the directory is let go). */
  processesEnd(session: Session): void;
  /** The session is gone and its own holds released (disk watch, processes, working directory). */
  onEnd(session: Session, exit: Exit): Promise<void>;
  /** The server began to stop. */
  stopped(): boolean;
}

export async function placeSession(deps: StartDeps, request: StartRequest): Promise<Place> {
  const { config } = deps;
  const driver = DRIVERS[request.language];
  const [backend, interpreter] = await Promise.all([
    deps.backends.get(),
    deps.interpreters.get(driver.interpreter),
  ]);
  const rules =
    config.network === 'allowlist' || request.allowedDomains
      ? new EgressRecord(callRules(config, request.allowedDomains))
      : undefined;
  const id = newId('sess');
  const workspace = join(config.sandboxDir, id);
  await mkdir(workspace, { recursive: true, mode: 0o700 });
  return { id, backend, driver, interpreter, workspace, cwd: request.workingDir?.path ?? workspace, rules };
}

/** The pty's relay (its sandbox must run it and give it a terminal: found out once), lane, packages, channel. */
export async function gatherExtras(deps: StartDeps, request: StartRequest, place: Place): Promise<Extras> {
  const { backend, workspace } = place;
  let lane: OpenedLane | undefined;
  try {
    const pty = request.pty
      ? await ptyPython(deps.interpreters, backend, {
          workspace,
          env: codeEnv(backend.capabilities, deps.hostEnv, {}, workspace),
          limits: deps.config.limits,
        })
      : undefined;
    lane = place.rules && (await openSandboxLane(laneOptions(deps, place, place.rules)));
    const packages = await sessionPackages(deps.config, place.driver.interpreter, workspace);
    const channel = request.bridge && (await openChannel(workspace, request.bridge));
    const host = request.language === 'bash' ? await bashHostPython(deps.interpreters) : undefined;
    return { pty, lane, packages, channel, host };
  } catch (error) {
    await lane?.lane.close();
    await rm(workspace, { recursive: true, force: true });
    throw error;
  }
}

function laneOptions(deps: StartDeps, place: Place, user: EgressRecord) {
  const python = () => deps.interpreters.get('python');
  const { egress } = place.backend.capabilities;
  const { allowed } = deps.config.egress;
  return { egress, workspace: place.workspace, python, user, allowed, credentials: deps.credentials };
}

/** The driver's spec: its command line (behind the pty relay and bash's host), environment, paths. */
export function driverSpec(
  deps: StartDeps,
  request: StartRequest,
  place: Place,
  extras: Extras,
): SandboxSpec {
  const { backend, driver, workspace, cwd } = place;
  const { pty, lane, packages, channel, host } = extras;
  // Python sends return their matplotlib figures (engine/images.ts).
  const python = driver.interpreter === 'python';
  const runtimeEnv = {
    ...driver.env,
    ...packages.env,
    ...(python && figureEnv(workspace, packages.env.PYTHONPATH)),
  };
  if (channel && python)
    runtimeEnv.PYTHONPATH = [runtimeEnv.PYTHONPATH, CODE_MODE_DIR].filter(Boolean).join(':');
  const driverArgv = pty
    ? ptyArgv(backend.capabilities, pty, driver.argv(place.interpreter))
    : driver.argv(place.interpreter);
  const argv = host ? hostArgv(host, driverArgv) : driverArgv;
  const env = { ...runtimeEnv, ...channelEnv(channel), ...lane?.env };
  return sandboxSpec({
    argv: channel && !python ? [argv[0] as string, ...NODE_IMPORT, ...argv.slice(1)] : argv,
    cwd,
    held: request.workingDir,
    env: codeEnv(backend.capabilities, deps.hostEnv, env, workspace),
    writable: [workspace, cwd],
    readable: [
      driver.file,
      ...(pty ? [PTY_RELAY] : []),
      ...(host ? BASH_HOST_FILES : []),
      ...packages.readable,
      ...(python ? PYTHON_SUPPORT_FILES : []),
      ...(channel ? CODE_MODE_FILES : []),
      // A port's forwarder (start_process expose_port) runs from these.
      ...(driver.interpreter === 'node' ? [PORT_FORWARD_NODE] : [FORWARDER]),
    ],
    limits: deps.config.limits,
    network: deps.config.network,
    egress: lane?.endpoint,
    stdin: 'pipe',
    control: true,
    terminal: Boolean(pty),
    mounts: deps.mounts?.of(currentPrincipal()),
  });
}

/**
 * How a port's forwarder runs in the session's sandbox (processes.ts), where it has a loopback of
 * its own: by the session's own interpreter (node, python, or a bash session's host Python; in a
 * container, the image's, by name), with paths as the sandbox sees them (`inside`).
 */
function forwarderOf(place: Place, extras: Extras, inside: (path: string) => string) {
  const { capabilities } = place.backend;
  if (capabilities.egress !== 'socket') return undefined;
  const own = (host: string, name: string) => (capabilities.ownInterpreters ? name : host);
  const workspace = inside(place.workspace);
  if (place.driver.interpreter === 'node')
    return { argv: [own(place.interpreter, 'node'), inside(PORT_FORWARD_NODE)], workspace };
  const python = place.driver.interpreter === 'python' ? place.interpreter : extras.host;
  if (!python) return undefined;
  return { argv: [own(python, 'python3'), '-I', '-S', inside(FORWARDER), '--expose'], workspace };
}

/**
 * Spawn the driver and wait for its `ready`. The session's working directory is held from here for
 * its life (a caller's is start_session's until this point); a driver that does not start, or
 * starts as the server stops, takes its workspace, lane and channel with it.
 */
export async function startDriver(
  deps: StartDeps,
  request: StartRequest,
  place: Place,
  extras: Extras,
  hooks: DriverHooks,
): Promise<Session> {
  const { backend, workspace } = place;
  const proc = backend.spawn(driverSpec(deps, request, place, extras));
  const dir = request.workingDir ?? HeldDir.ofOwn(workspace);
  const session: Session = new Session(proc, {
    id: place.id,
    language: request.language,
    name: request.name ?? null,
    cwd: place.cwd,
    dir,
    workspace,
    ...(place.driver.interpreter === 'python' && { figuresWorkspace: workspace }),
    config: deps.config,
    sandboxMode: backend.mode,
    limits: namedLimits(deps.config, backend.capabilities),
    pty: Boolean(extras.pty),
    hostsProcesses: request.language !== 'bash' || extras.host !== undefined,
    forwarder: forwarderOf(place, extras, (path) => proc.insidePath?.(path) ?? path),
    secrets: deps.secrets,
    outputs: deps.outputs,
    onExecution: (entry) => hooks.onExecution(entry),
    onProcess: (event) => hooks.onProcess(session, event),
    onEnd: (exit) => {
      unwatch();
      hooks.processesEnd(session);
      dir.close();
      return hooks.onEnd(session, exit);
    },
  });
  const unwatch = watchSessionDisk(deps.disk, workspace, currentPrincipal(), session);
  try {
    await session.ready();
    // The server began to stop while this driver was starting: nobody else will kill it.
    if (hooks.stopped()) {
      await session.kill('server_shutdown');
      throw new SessionLimitError('the server is shutting down; no new sessions');
    }
  } catch (error) {
    dir.close();
    await Promise.all([extras.channel?.close(), extras.lane?.lane.close()]);
    await rm(workspace, { recursive: true, force: true });
    throw error;
  }
  return session;
}
