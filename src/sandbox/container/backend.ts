// Sandbox mode docker: each run is a container started by the docker or podman CLI (args.ts),
// removed when it ends; drivers get their control channel over a socket (control.ts);
// execute_command's runs go to a persistent container by `exec` (persistent.ts), except those of
// the egress allowlist: their forwarder needs a network of their own (a container of their own).
import { execFile, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { SandboxUnavailableError } from '../../errors/index.js';
import { isWithin, log } from '../../util/index.js';
import type { Watcher } from '../host/index.js';
import { DRIVERS, FORWARDER, forwards, identityFor, Lease, NOBODY } from '../host/index.js';
import type { Availability, Capabilities, SandboxBackend, SandboxedProcess, SandboxSpec } from '../types.js';
import { LIMIT_NOTE, NotForkableError } from '../types.js';
import {
  buildContainerArgs,
  buildExecArgs,
  type ContainerRun,
  containerNetwork,
  type ImageInfo,
  LABEL,
  lingers,
  mountsFor,
  NO_DEV_NULL,
  pathMapper,
} from './args.js';
import { listenForDriver } from './control.js';
import { type ContainerEngine, type EngineChoice, findEngine } from './engine.js';
import { engineCwd } from './engine-cwd.js';
import { inspectImage } from './inspect.js';
import { OciRunner, ociRuntime, sweepDeadRunners } from './oci/runner.js';
import { createTemplate } from './oci/template.js';
import { PersistentContainers } from './persistent.js';
import { type Handle, removeContainer, spawnWhenStarted, wrap } from './process.js';
import { containerReaper, DeferredRemoval, processStart, removeArgv, sweepDeadServers } from './reaper.js';
import { isGvisor, runtimeArgs } from './runtime.js';

const run = promisify(execFile);
const LAUNCHER = join(DRIVERS, 'container_control.py');
const WRAPPER = join(DRIVERS, 'container_init.sh');
/** The template's limits: each run's own replace them (oci/bundle.ts). */
const TEMPLATE_LIMITS = { memoryMb: 0, maxProcs: 64, maxFileMb: 1 };

/** CODEXEC_CONTAINER_ENGINE and CODEXEC_DOCKER_* (config.docker). */
export interface ContainerOptions {
  readonly engine: EngineChoice;
  /** The OCI runtime of every container (e.g. runsc); absent: the engine's default. */
  readonly runtime?: string;
  readonly image: string;
  /** `--memory` (and `--memory-swap`: no swap), e.g. 512m. */
  readonly memory: string;
  readonly cpu: number;
  readonly network: string;
}

interface Ready {
  readonly engine: ContainerEngine;
  /** One-shot containers through the OCI runtime itself (oci/), where it can: rootful podman. */
  readonly oci: OciRunner | undefined;
  readonly image: ImageInfo;
  readonly reaper: Watcher;
  readonly persistent: PersistentContainers;
  readonly removals: DeferredRemoval;
}

export class ContainerBackend implements SandboxBackend {
  readonly mode = 'docker' as const;
  readonly capabilities: Capabilities;
  private ready: Ready | undefined;
  private probing: Promise<Availability> | undefined;
  /** Names this server's containers and marks them as its own (reaper.ts sweeps dead servers'). */
  private readonly serverId = randomBytes(4).toString('hex');
  private count = 0;

  constructor(private readonly options: ContainerOptions) {
    this.capabilities = {
      ownHome: true,
      egress: 'socket',
      processesOutlive: false,
      terminal: 'own',
      signalsGroup: true,
      ownInterpreters: true,
      memorySetting: `CODEXEC_DOCKER_MEMORY=${options.memory}`,
    };
  }

  /** What the image says of itself, once probed. */
  get image(): ImageInfo | undefined {
    return this.ready?.image;
  }

  /** The OCI runtime that starts one-shot containers without the engine, once probed, if one does. */
  get oneShotRuntime(): string | undefined {
    return this.ready?.oci?.runtime;
  }

  /** Find the engine and the image; a failure is not kept (the operator may build the image). */
  probe(): Promise<Availability> {
    if (this.ready) return Promise.resolve({ available: true });
    this.probing ??= this.find().finally(() => {
      this.probing = undefined;
    });
    return this.probing;
  }

  /** Remove the persistent containers and those waiting to be removed (the others go with their runs). */
  async shutdown(): Promise<void> {
    const ready = this.ready;
    if (!ready) return;
    await Promise.all([ready.persistent.closeAll(), ready.removals.flush(), ready.oci?.close()]);
    if (ready.oci) ready.removals.add(ready.oci.template.name);
    await ready.removals.flush();
  }

  private async find(): Promise<Availability> {
    let engine: ContainerEngine;
    try {
      engine = await findEngine(this.options.engine, this.options.runtime);
    } catch (error) {
      return { available: false, reason: (error as Error).message };
    }
    const image = await inspectImage(engine, this.options.image);
    if (typeof image === 'string') return { available: false, reason: image };
    await sweepDeadServers(engine);
    const reaper = containerReaper(engine);
    const removals = new DeferredRemoval(engine, (name) => reaper.release(name));
    const persistent = new PersistentContainers(
      engine,
      (name) => this.runOptions(name, image, engine, NOBODY),
      (name) => reaper.watch(name),
      (name) => reaper.release(name),
    );
    const oci = await this.openOci(engine, image, reaper);
    this.ready = { engine, image, oci, reaper, persistent, removals };
    return { available: true };
  }

  /**
   * The OCI runtime path, where the server is root and the engine podman (docker shows no
   * container's configuration); else, or when it cannot be prepared, every run goes through the
   * engine as before.
   */
  private async openOci(
    engine: ContainerEngine,
    image: ImageInfo,
    reaper: Watcher,
  ): Promise<OciRunner | undefined> {
    const runtime = ociRuntime(engine);
    if (process.getuid?.() !== 0 || engine.name !== 'podman' || !runtime) return undefined;
    await sweepDeadRunners();
    const name = `codexec-${this.serverId}-template`;
    reaper.watch(name);
    try {
      const template = await createTemplate(
        engine,
        { ...this.runOptions(name, image, engine, NOBODY), network: 'none' },
        TEMPLATE_LIMITS,
      );
      return new OciRunner(runtime, this.serverId, template);
    } catch (error) {
      log('warn', `docker mode starts every container through ${engine.name}: ${(error as Error).message}`);
      const [binary = engine.binary, ...args] = removeArgv(engine);
      await run(binary, [...args, name]).catch(() => {});
      reaper.release(name);
      return undefined;
    }
  }

  private runOptions(
    name: string,
    image: ImageInfo,
    engine: ContainerEngine,
    user: ContainerRun['user'],
  ): ContainerRun {
    const rootless = process.getuid?.() !== 0;
    const profile = this.ready?.oci?.seccompProfile;
    const extra = [
      ...(rootless && engine.name === 'podman' ? ['--userns', 'keep-id'] : []),
      ...runtimeArgs(engine, this.options.network).run,
      // The engine's own profile, narrowed (oci/seccomp.ts): the same as the one-shots'.
      ...(profile ? ['--security-opt', `seccomp=${profile}`] : []),
    ];
    return {
      name,
      labels: {
        [LABEL]: '1',
        'codexec.server': this.serverId,
        'codexec.host': hostname(),
        'codexec.pid': String(process.pid),
        'codexec.started': processStart() ?? '',
      },
      image,
      user,
      memory: this.options.memory,
      cpus: this.options.cpu,
      network: this.options.network,
      ...(isGvisor(engine.runtime) && { gvisor: true }),
      wrapper: WRAPPER,
      ...(extra.length > 0 && { extra }),
    };
  }

  private newName(): string {
    return `codexec-${this.serverId}-${(this.count++).toString(36)}`;
  }

  spawn(spec: SandboxSpec): SandboxedProcess {
    const ready = this.ready;
    if (!ready) throw new SandboxUnavailableError('sandbox mode docker: the container engine was not probed');
    if (spec.zygote === 'only') throw new NotForkableError();
    // Before anything is lent: a spec this backend cannot give its network is refused whole.
    const network = containerNetwork(spec, this.options.network);
    const uid = process.getuid?.() ?? 0;
    const user = uid === 0 ? identityFor(spec) : { uid, gid: process.getgid?.() ?? uid };
    const lease = uid === 0 ? new Lease(user) : undefined;
    lease?.lend(spec);
    // The egress allowlist's forwarder needs a network of the run's own: a persistent container
    // has one for all its commands (a command's forwarder would hold the proxy's port against the
    // next, and outlive it), and the proxy's socket lies in the run's workspace, not in its mounts.
    const persistent =
      spec.network !== 'allowlist' && spec.persistent?.mounts.some((dir) => isWithin(spec.cwd, dir))
        ? spec.persistent
        : undefined;
    const own = [WRAPPER, ...(spec.control ? [LAUNCHER] : []), ...(forwards(spec) ? [FORWARDER] : [])];
    const ownSpec = { ...spec, readablePaths: [...spec.readablePaths, ...own] };
    let handle: Handle;
    if (persistent) handle = this.execIn(ready, spec, persistent, user);
    else if (ready.oci?.takes(ownSpec, network))
      handle = this.ociRunIn(ready.oci, ready.image, ownSpec, user);
    else handle = this.runIn(ready, ownSpec, user, network);
    return wrap(handle, lease);
  }

  /** A container of its own, started by the OCI runtime. */
  private ociRunIn(oci: OciRunner, image: ImageInfo, spec: SandboxSpec, user: ContainerRun['user']): Handle {
    const control = spec.control ? listenForDriver(spec.writablePaths[0] ?? spec.cwd) : undefined;
    const run = { image, user, wrapper: WRAPPER, ...(spec.control && { controlLauncher: LAUNCHER }) };
    return oci.start(this.newName(), spec, run, control);
  }

  /** A container of its own. */
  private runIn(ready: Ready, spec: SandboxSpec, user: ContainerRun['user'], network: string): Handle {
    const { engine, image, reaper } = ready;
    const name = this.newName();
    const workspace = spec.writablePaths[0] ?? spec.cwd;
    const control = spec.control ? listenForDriver(workspace) : undefined;
    const args = buildContainerArgs(spec, {
      ...this.runOptions(name, image, engine, user),
      network,
      ...(spec.control && { controlLauncher: LAUNCHER }),
    });
    reaper.watch(name);
    const cli = [...engine.global, ...runtimeArgs(engine, network).before, ...args];
    const child = spawn(engine.binary, cli, { stdio: [spec.stdin, 'pipe', 'pipe'], cwd: engineCwd() });
    return {
      child,
      control,
      ownContainer: true,
      limitNote: join(workspace, LIMIT_NOTE),
      insidePath: pathMapper(mountsFor(spec)),
      signal(signal) {
        void run(engine.binary, [...engine.global, 'kill', '--signal', signal, name]).catch(() => {});
      },
      async hostPid() {
        const inspect = [...engine.global, 'inspect', '--format', '{{.State.Pid}}', name];
        const pid = Number((await run(engine.binary, inspect).catch(() => ({ stdout: '' }))).stdout);
        return pid > 0 ? pid : undefined;
      },
      lingers: lingers(spec),
      async cleanUp(cliExited) {
        // An engine CLI that has exited has removed its container (--rm).
        if (cliExited()) reaper.release(name);
        // A warm run's container waits, stopped, to be removed with others (the reaper keeps it).
        else if (lingers(spec)) ready.removals.add(name);
        else {
          await removeContainer(engine, name, child, cliExited);
          reaper.release(name);
        }
      },
    };
  }

  /** A command in the persistent container of its key, by `exec` (started on first use). */
  private execIn(
    ready: Ready,
    spec: SandboxSpec,
    persistent: NonNullable<SandboxSpec['persistent']>,
    user: ContainerRun['user'],
  ): Handle {
    const { engine, image } = ready;
    const tag = randomBytes(6).toString('hex');
    const [root = spec.cwd] = persistent.mounts;
    const limitNote = join(root, `${LIMIT_NOTE}-${tag}`);
    const pidFile = `/tmp/.codexec-${tag}.pid`;
    const container = ready.persistent.acquire(persistent.key, persistent.mounts, this.newName(), spec);
    // HOME (the run's own workspace) is not in the persistent container: its /tmp is.
    const env = { ...spec.env, HOME: '/tmp' };
    const args = buildExecArgs(
      { ...spec, env },
      { name: container.name, image, user, wrapper: WRAPPER },
      container.mounts,
      {
        limit: limitNote,
        pidFile,
      },
    );
    const child = spawnWhenStarted(container.started, [engine.binary, ...engine.global, ...args], spec.stdin);
    const signalGroup = (signal: NodeJS.Signals) =>
      container.started.then(() =>
        run(engine.binary, [
          ...engine.global,
          'exec',
          ...NO_DEV_NULL,
          // As the command's own user: signals cross no uid.
          '--user',
          `${user.uid}:${user.gid}`,
          container.name,
          image.interpreters.bash ?? 'bash',
          '-c',
          `kill -s ${signal.replace(/^SIG/, '')} -- -$(cat ${pidFile}) 2>/dev/null; true`,
        ]),
      );
    return {
      child,
      control: undefined,
      limitNote,
      insidePath: pathMapper(container.mounts),
      signal(signal) {
        void signalGroup(signal).catch(() => {});
      },
      async cleanUp() {
        ready.persistent.release(persistent.key);
      },
    };
  }
}
