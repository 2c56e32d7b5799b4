import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { unlinkSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { SandboxUnavailableError } from '../../errors/index.js';
import { identityFor, Lease } from '../namespace/ownership.js';
import { ignoreStreamErrors } from '../streams.js';
import type { Availability, Exit, SandboxBackend, SandboxedProcess, SandboxSpec } from '../types.js';
import { NotForkableError } from '../types.js';
import {
  buildContainerArgs,
  DRIVERS,
  type ImageInfo,
  LABEL,
  mountsFor,
  OOM_NOTE,
  pathMapper,
} from './args.js';
import { type ControlListener, listenForDriver } from './control.js';
import { type ContainerEngine, type EngineChoice, findEngine } from './engine.js';
import { ContainerReaper, processStart, removeArgv, sweepDeadServers } from './reaper.js';

const run = promisify(execFile);
const LAUNCHER = join(DRIVERS, 'container_control.py');
const WRAPPER = join(DRIVERS, 'container_init.sh');
/** How often a container that the engine has not created yet is asked to go again. */
const REMOVE_RETRY_MS = 100;
/** After this long an engine CLI that does not end is killed (the reaper still has the name). */
const REMOVE_GIVE_UP_MS = 30_000;

/** CODEXEC_CONTAINER_ENGINE and CODEXEC_DOCKER_* (config.docker). */
export interface ContainerOptions {
  readonly engine: EngineChoice;
  readonly image: string;
  /** `--memory` (and `--memory-swap`: no swap), e.g. 512m. */
  readonly memory: string;
  readonly cpu: number;
  readonly network: string;
}

interface Ready {
  readonly engine: ContainerEngine;
  readonly image: ImageInfo;
  readonly reaper: ContainerReaper;
}

/**
 * Sandbox mode docker: each run is a container started by the docker or podman CLI (args.ts),
 * removed when released; drivers get their control channel over a socket (control.ts).
 */
export class ContainerBackend implements SandboxBackend {
  readonly mode = 'docker' as const;
  private ready: Ready | undefined;
  private probing: Promise<Availability> | undefined;
  /** Names this server's containers and marks them as its own (reaper.ts sweeps dead servers'). */
  private readonly serverId = randomBytes(4).toString('hex');
  private count = 0;

  constructor(private readonly options: ContainerOptions) {}

  /** The engine in use, once probed. */
  get engine(): ContainerEngine | undefined {
    return this.ready?.engine;
  }

  /** What the image says of itself, once probed. */
  get image(): ImageInfo | undefined {
    return this.ready?.image;
  }

  /** Find the engine and the image; a failure is not kept (the operator may build the image). */
  probe(): Promise<Availability> {
    if (this.ready) return Promise.resolve({ available: true });
    this.probing ??= this.find().finally(() => {
      this.probing = undefined;
    });
    return this.probing;
  }

  private async find(): Promise<Availability> {
    let engine: ContainerEngine;
    try {
      engine = await findEngine(this.options.engine);
    } catch (error) {
      return { available: false, reason: (error as Error).message };
    }
    const image = await inspectImage(engine, this.options.image);
    if (typeof image === 'string') return { available: false, reason: image };
    await sweepDeadServers(engine);
    this.ready = { engine, image, reaper: new ContainerReaper(engine) };
    return { available: true };
  }

  spawn(spec: SandboxSpec): SandboxedProcess {
    const ready = this.ready;
    if (!ready) throw new SandboxUnavailableError('sandbox mode docker: the container engine was not probed');
    if (spec.zygote === 'only') throw new NotForkableError();
    const { engine, image, reaper } = ready;
    const name = `codexec-${this.serverId}-${(this.count++).toString(36)}`;
    const uid = process.getuid?.() ?? 0;
    const root = uid === 0;
    const user = root ? identityFor(spec.cwd) : { uid, gid: process.getgid?.() ?? uid };
    const lease = root ? new Lease(user) : undefined;
    lease?.lend(spec.writablePaths);
    const workspace = spec.writablePaths[0] ?? spec.cwd;
    const control: ControlListener | undefined = spec.control ? listenForDriver(workspace) : undefined;
    const full = {
      ...spec,
      readablePaths: [...spec.readablePaths, WRAPPER, ...(spec.control ? [LAUNCHER] : [])],
    };
    const args = buildContainerArgs(full, {
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
      ...(!root && engine.name === 'podman' && { extra: ['--userns', 'keep-id'] }),
      wrapper: WRAPPER,
      ...(spec.control && { controlLauncher: LAUNCHER }),
    });
    reaper.watch(name);
    const child = spawn(engine.binary, [...engine.global, ...args], {
      stdio: [spec.stdin, 'pipe', 'pipe'],
      env: process.env,
    });
    ignoreStreamErrors(child);
    let killedByUs = false;
    let cliExited = false;
    const exited = new Promise<Exit>((resolve) => {
      child.once('error', (error) => {
        cliExited = true;
        control?.close();
        resolve({ code: null, signal: null, spawnError: error });
      });
      child.once('exit', (code, signal) => {
        cliExited = true;
        control?.close();
        // The wrapper's note: the memory cgroup killed the program (read before the artifacts are).
        const oom = code === 137 && !killedByUs && takeNote(join(workspace, OOM_NOTE));
        resolve({ code, signal, ...(oom && { limit: 'memory' as const }) });
      });
    });
    const { stdout, stderr } = child;
    if (!stdout || !stderr) throw new Error('spawn returned no output pipes');
    let disposed: Promise<void> | undefined;
    return {
      pid: child.pid,
      stdout,
      stderr,
      stdin: child.stdin,
      control: control?.channel ?? null,
      exited,
      insidePath: pathMapper(mountsFor(full)),
      relaysOutput: true,
      kill(signal) {
        if (cliExited) return;
        if (signal === 'SIGKILL') killedByUs = true;
        void run(engine.binary, [...engine.global, 'kill', '--signal', signal, name]).catch(() => {});
      },
      dispose() {
        disposed ??= (async () => {
          control?.close();
          // An engine CLI that has exited has removed its container (--rm).
          if (!cliExited) await removeContainer(engine, name, child, () => cliExited);
          reaper.release(name);
          await lease?.giveBack();
        })();
        return disposed;
      },
    };
  }
}

/**
 * Remove a container whose engine CLI still runs: asked again until the CLI is gone (a container
 * still being created is not there to remove yet). A CLI that hangs on is killed after a while.
 */
async function removeContainer(
  engine: ContainerEngine,
  name: string,
  child: ChildProcess,
  cliExited: () => boolean,
): Promise<void> {
  const [binary = engine.binary, ...args] = removeArgv(engine);
  const gone = new Promise((resolve) => {
    if (cliExited()) resolve(undefined);
    else child.once('exit', resolve);
  });
  for (let tries = 0; !cliExited(); tries++) {
    if (tries * REMOVE_RETRY_MS >= REMOVE_GIVE_UP_MS) {
      child.kill('SIGKILL');
      break;
    }
    await run(binary, [...args, name]).catch(() => {});
    await Promise.race([gone, new Promise((resolve) => setTimeout(resolve, REMOVE_RETRY_MS))]);
  }
}

/** Whether the file was there; it is gone now. */
function takeNote(path: string): boolean {
  try {
    unlinkSync(path);
    return true;
  } catch {
    return false;
  }
}

/** The image's interpreters and PATH, or why it cannot be used. */
async function inspectImage(engine: ContainerEngine, name: string): Promise<ImageInfo | string> {
  let raw: string;
  try {
    ({ stdout: raw } = await run(engine.binary, [
      ...engine.global,
      'image',
      'inspect',
      '--format',
      '{{json .Config}}',
      name,
    ]));
  } catch {
    return (
      `the sandbox image "${name}" is not in ${engine.name}'s store: build it with \`codexec image build\` ` +
      '(or `codexec image build --from-host` where no registry is reachable), or set CODEXEC_DOCKER_IMAGE'
    );
  }
  const config = JSON.parse(raw) as { Labels?: Record<string, string> | null; Env?: string[] | null };
  const labels = config.Labels ?? {};
  const path =
    (config.Env ?? []).find((entry) => entry.startsWith('PATH='))?.slice(5) ?? '/usr/local/bin:/usr/bin:/bin';
  const interpreters = Object.fromEntries(
    (['python', 'node', 'bash'] as const).flatMap((kind) => {
      const found = labels[`codexec.${kind}`];
      return found ? [[kind, found]] : [];
    }),
  );
  return { name, interpreters, path: path.split(':').filter(Boolean) };
}
