// The container command line as data: `<engine> run …` for one SandboxSpec. The workspace (the
// spec's first writable path) is mounted at /workspace, codexec's drivers at /opt/codexec/drivers
// and other read-only paths under /opt/codexec/ro, and every path in argv and env is rewritten to
// match: the code sees nothing of the host's layout. Other writable paths (a caller's working dir)
// keep their own paths. argv[0] becomes the image's interpreter of the same kind (its
// `codexec.<kind>` label), not the host's.
import { existsSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { isWithin } from '../../util/index.js';
import { DRIVERS, forwardedArgv, forwards } from '../host/index.js';
import { LIMIT_NOTE, type SandboxSpec } from '../types.js';

export const WORKSPACE = '/workspace';
export const DRIVERS_INSIDE = '/opt/codexec/drivers';
const READ_ONLY_INSIDE = '/opt/codexec/ro';
/** The control socket's name in the workspace, while a driver connects to it (control.ts). */
export const CONTROL_SOCKET = '.codexec-control';
/** Labels every container of ours carries: the server that made it, to sweep those of dead ones. */
export const LABEL = 'codexec';

/** What the image says about itself (its labels and PATH), read once by `image inspect`. */
export interface ImageInfo {
  readonly name: string;
  readonly interpreters: Readonly<Partial<Record<'python' | 'node' | 'bash', string>>>;
  readonly path: readonly string[];
}

export interface ContainerRun {
  readonly name: string;
  /** The server's id and liveness stamp: `codexec.server`, `codexec.pid`, `codexec.started`. */
  readonly labels: Readonly<Record<string, string>>;
  readonly image: ImageInfo;
  readonly user: { readonly uid: number; readonly gid: number };
  readonly memory: string;
  readonly cpus: number;
  readonly network: string;
  /** The runtime is gVisor's runsc: processes are bounded inside it (processBounds). */
  readonly gvisor?: boolean;
  /** Extra options: `--userns keep-id` for rootless podman. */
  readonly extra?: readonly string[];
  /** The wrapper between the engine's init and the program (drivers/container_init.sh). */
  readonly wrapper: string;
  /** The control launcher (drivers/container_control.py), when spec.control is set. */
  readonly controlLauncher?: string;
}

/** A host directory and where the container sees it. */
export interface Mount {
  readonly host: string;
  readonly inside: string;
  readonly writable: boolean;
}

/** The mounts of a spec: workspace, other writable paths, drivers, other readable paths, the operator's. */
export function mountsFor(
  spec: Pick<SandboxSpec, 'cwd' | 'writablePaths' | 'readablePaths' | 'mounts'>,
): Mount[] {
  const [workspace = spec.cwd, ...otherWritable] = spec.writablePaths;
  const mounts: Mount[] = [{ host: workspace, inside: WORKSPACE, writable: true }];
  for (const path of otherWritable)
    if (existsSync(path)) mounts.push({ host: path, inside: path, writable: true });
  const readable = [...new Set(spec.readablePaths)].filter((path) => existsSync(path)).sort();
  if (readable.some((path) => isWithin(path, DRIVERS)))
    mounts.push({ host: DRIVERS, inside: DRIVERS_INSIDE, writable: false });
  for (const path of readable) {
    if (mounts.some((mount) => isWithin(path, mount.host))) continue;
    // A file keeps its name (error messages and shebangs name it).
    mounts.push({
      host: path,
      inside: `${READ_ONLY_INSIDE}/${mounts.length}/${basename(path)}`,
      writable: false,
    });
  }
  // The operator's, at their targets: the engine is given the path (it opens what is there).
  for (const mount of spec.mounts ?? [])
    mounts.push({ host: mount.path, inside: mount.target, writable: false });
  return mounts;
}

/**
 * Host path → its path in the container (the deepest mount holding it), else unchanged; only
 * absolute paths are host paths (an argument "x" is the program's own).
 */
export function pathMapper(mounts: readonly Mount[]): (path: string) => string {
  const ordered = [...mounts].sort((a, b) => b.host.length - a.host.length);
  return (path) => {
    if (!path.startsWith('/')) return path;
    const mount = ordered.find((m) => isWithin(path, m.host));
    return mount ? mount.inside + path.slice(mount.host.length) : path;
  };
}

/**
 * The image's program for a host interpreter path, by its name (python3.11 → python; npm → the
 * npm beside the image's node); other programs keep their path.
 */
export function imageInterpreter(image: ImageInfo, hostBinary: string): string {
  const name = basename(hostBinary);
  const { python, node, bash } = image.interpreters;
  if (/^python/.test(name) && python) return python;
  if (name === 'node' && node) return node;
  if (name === 'bash' && bash) return bash;
  if (name === 'npm' && node) return join(dirname(node), 'npm');
  return hostBinary;
}

/** The options of `run` that confine a container (no mounts, no program). */
function confinement(run: ContainerRun, limits: SandboxSpec['limits']): string[] {
  const fileBytes = limits.maxFileMb * 1024 * 1024;
  return [
    // Removed by the engine once it exits (also when the server is gone by then).
    '--rm',
    '--name',
    run.name,
    ...Object.entries(run.labels).flatMap(([key, value]) => ['--label', `${key}=${value}`]),
    // pid 1 of a container ignores SIGTERM it has no handler for: a tiny init forwards it, and
    // reaps the code's orphans.
    '--init',
    '--network',
    run.network,
    '--memory',
    run.memory,
    '--memory-swap',
    run.memory,
    '--cpus',
    String(run.cpus),
    ...processBounds(limits.maxProcs, run.gvisor === true),
    '--read-only',
    '--tmpfs',
    '/tmp:rw,size=100m,mode=1777',
    '--cap-drop',
    'ALL',
    '--security-opt',
    'no-new-privileges',
    '--user',
    `${run.user.uid}:${run.user.gid}`,
    // runc refuses the engine's default nofile where it exceeds the host's hard limit.
    '--ulimit',
    'nofile=1024:1024',
    '--ulimit',
    'core=0',
    '--ulimit',
    `fsize=${fileBytes}`,
    // Output is streamed to us; the engine keeps no copy of it.
    '--log-driver',
    'none',
    ...(run.extra ?? []),
  ];
}

/**
 * Host threads a gVisor sandbox may use per process of its code, and its own at rest. On gVisor's
 * default platform (ptrace) each process of the code is a host stub process with one host thread
 * per Sentry thread that ran it, beside the Sentry's and Gofer's own threads: all in the host pids
 * cgroup, and more the longer many processes run. Measured here (runsc 20221219, 2 CPUs, podman):
 * 47 at rest; 500 sleeps, four busy loops and 200 Python threads 4109; a fork bomb held by
 * RLIMIT_NPROC at 64 processes 895 after 15 s, at 256 from 8737 to 9417 in three 27 s runs (up
 * to 37 per process: a bound of 32 per process was reached). 64 per process plus 1024 leaves
 * about twice the worst seen; a sandbox at its bound lost its exit status (2) here.
 */
export const GVISOR_THREADS_PER_PROCESS = 64;
export const GVISOR_OWN_THREADS = 1024;

/**
 * `--pids-limit` and RLIMIT_NPROC for CODEXEC_MAX_PROCS. runc: the container's pids cgroup holds
 * its processes; RLIMIT_NPROC is counted per host uid there (with the host's processes of that
 * uid), so it only stands far back. gVisor: the host cgroup counts gVisor's threads, not the
 * code's processes (a bound of CODEXEC_MAX_PROCS there kills the whole sandbox, with no output);
 * gVisor's kernel counts RLIMIT_NPROC per uid inside the sandbox (threads too, as Linux does),
 * which holds the code at CODEXEC_MAX_PROCS, and the host cgroup gets room for gVisor's threads.
 */
export function processBounds(maxProcs: number, gvisor: boolean): string[] {
  const { pids, nproc } = processLimits(maxProcs, gvisor);
  return ['--pids-limit', String(pids), '--ulimit', `nproc=${nproc}:${nproc}`];
}

/** The pids cgroup's bound and RLIMIT_NPROC of processBounds, as numbers (an OCI bundle's). */
export function processLimits(maxProcs: number, gvisor: boolean): { pids: number; nproc: number } {
  if (!gvisor) return { pids: maxProcs, nproc: 4096 };
  return { pids: GVISOR_OWN_THREADS + GVISOR_THREADS_PER_PROCESS * maxProcs, nproc: maxProcs };
}

const volumes = (mounts: readonly Mount[]) =>
  mounts.flatMap((mount) => ['--volume', `${mount.host}:${mount.inside}:${mount.writable ? 'rw' : 'ro'}`]);

/** How drivers/container_init.sh ends: see its header. */
export type WrapperMode = 'run' | 'linger' | 'warm' | 'exec';

/**
 * A warm one-shot driver's container stays, stopped, once its program is over: the server removes
 * such containers together when it is idle (backend.ts).
 */
export function lingers(spec: SandboxSpec): boolean {
  return spec.control === true && spec.stdin === 'ignore';
}

/**
 * The network of a spec's own container: the host's for an installer (install_package into a
 * session), `none` for the egress allowlist (only loopback: its forwarder relays to the proxy's
 * socket in the workspace), else the configured one (CODEXEC_DOCKER_NETWORK).
 */
export function containerNetwork(spec: SandboxSpec, configured: string): string {
  if (spec.network === 'host') return 'host';
  if (spec.network !== 'allowlist') return configured;
  // A proxy port on the host's loopback (landlock's way) is out of a container's reach, and so is
  // a socket outside its mounts.
  if (!forwards(spec))
    throw new TypeError('network allowlist in a container needs egress.socket and egress.python');
  const { socket } = spec.egress;
  if (!spec.writablePaths.some((path) => isWithin(socket, path)))
    throw new TypeError(`the egress socket ${socket} is outside the run's writable paths`);
  return 'none';
}

/**
 * Every container's stdin a pipe from the engine, never the host's /dev/null (what the engine
 * gives one without --interactive): runsc (and crun before 1.24) chown their stdio to the
 * container's user, which would hand the host's /dev/null to the sandbox's uid. A run without
 * stdin gets the engine's at its end at once (spawned with /dev/null), which reads as /dev/null.
 */
export const NO_DEV_NULL = ['--interactive'] as const;

/** `run` for one SandboxSpec: its own container, its own mounts. */
export function buildContainerArgs(spec: SandboxSpec, run: ContainerRun): string[] {
  const mounts = mountsFor(spec);
  const map = pathMapper(mounts);
  return [
    'run',
    ...confinement(run, spec.limits),
    ...NO_DEV_NULL,
    ...volumes(mounts),
    ...processArgs(spec, map, run.image),
    run.image.name,
    ...commandLine(spec, run, map, lingers(spec) ? 'linger' : 'run', `${WORKSPACE}/${LIMIT_NOTE}`, '-'),
  ];
}

/**
 * What `run` of a spec starts, as data: its mounts, working directory, environment and argv (an
 * OCI bundle's process, oci/bundle.ts).
 */
export function containerProcess(
  spec: SandboxSpec,
  run: Pick<ContainerRun, 'image' | 'wrapper' | 'controlLauncher'>,
  mode: WrapperMode,
): { mounts: Mount[]; cwd: string; env: Record<string, string>; argv: string[] } {
  const mounts = mountsFor(spec);
  const map = pathMapper(mounts);
  return {
    mounts,
    cwd: map(spec.cwd),
    env: containerEnv(spec.env, map, run.image.path),
    argv: commandLine(spec, run, map, mode, `${WORKSPACE}/${LIMIT_NOTE}`, '-'),
  };
}

/** The program of a template container (oci/template.ts): created, never started. */
export const TEMPLATE_PROGRAM = ['-c', 'exit 0'] as const;

/**
 * `create` of a container that is never started: the engine writes its OCI configuration (the
 * confinement of every `run`), which the OCI runtime path starts runs from.
 */
export function buildTemplateArgs(run: ContainerRun, limits: SandboxSpec['limits']): string[] {
  const bash = run.image.interpreters.bash ?? 'bash';
  // (Its init, which the OCI path runs to write its configuration, gets stdio all the same.)
  return ['create', ...confinement(run, limits), ...NO_DEV_NULL, run.image.name, bash, ...TEMPLATE_PROGRAM];
}

/**
 * `run` for a persistent container (execute_command's, one per principal): the mounts stay, and
 * it lives while its stdin is open — it ends with the server however the server ends. It says
 * "ready" on stdout once it runs.
 */
export function buildPersistentArgs(
  mounts: readonly Mount[],
  run: ContainerRun,
  limits: SandboxSpec['limits'],
): string[] {
  const bash = run.image.interpreters.bash ?? 'bash';
  return [
    'run',
    ...confinement(run, limits),
    '--interactive',
    ...volumes(mounts),
    '--workdir',
    WORKSPACE,
    run.image.name,
    bash,
    '-c',
    'echo ready; read -r _',
  ];
}

/** `exec` of one SandboxSpec in a persistent container holding `mounts`. */
export function buildExecArgs(
  spec: SandboxSpec,
  run: Pick<ContainerRun, 'name' | 'image' | 'user' | 'wrapper'>,
  mounts: readonly Mount[],
  notes: { readonly limit: string; readonly pidFile: string },
): string[] {
  // One network for every command of the container: a command's forwarder would hold its port
  // against the next and outlive it (the backend runs an allowlist command in its own container).
  if (spec.network === 'allowlist')
    throw new TypeError('an allowlist run cannot go to a persistent container');
  const map = pathMapper(mounts);
  return [
    'exec',
    ...NO_DEV_NULL,
    '--user',
    `${run.user.uid}:${run.user.gid}`,
    ...processArgs(spec, map, run.image),
    run.name,
    ...commandLine(spec, run, map, 'exec', map(notes.limit), notes.pidFile),
  ];
}

/** Working directory and environment, paths mapped. */
function processArgs(spec: SandboxSpec, map: (path: string) => string, image: ImageInfo): string[] {
  const env = containerEnv(spec.env, map, image.path);
  return [
    '--workdir',
    map(spec.cwd),
    ...Object.entries(env).flatMap(([key, value]) => ['--env', `${key}=${value}`]),
  ];
}

/**
 * The wrapper, the egress forwarder when the spec has one, the control launcher when there is a
 * channel, and the program, paths mapped. The forwarder comes first: its relay, forked before the
 * launcher connects, never holds the control channel, and the wrapper's last kill (every process of
 * the container's user) ends it.
 */
function commandLine(
  spec: SandboxSpec,
  run: Pick<ContainerRun, 'image' | 'wrapper' | 'controlLauncher'>,
  map: (path: string) => string,
  mode: WrapperMode,
  limitNote: string,
  pidFile: string,
): string[] {
  const [binary, ...rest] = spec.argv;
  if (binary === undefined) throw new TypeError('SandboxSpec.argv is empty');
  // A file URL (node's --import of code mode's helper) names a path too.
  const mapArg = (arg: string) =>
    arg.startsWith('file:///') ? pathToFileURL(map(fileURLToPath(arg))).href : map(arg);
  const program = [imageInterpreter(run.image, binary), ...rest.map(mapArg)];
  const wrapper = [run.image.interpreters.bash ?? 'bash', map(run.wrapper), mode, limitNote, pidFile];
  const python = run.image.interpreters.python ?? 'python3';
  let inner = program;
  if (spec.control) {
    if (!run.controlLauncher) throw new TypeError('a control channel needs the control launcher');
    inner = [python, '-I', '-S', map(run.controlLauncher), `${WORKSPACE}/${CONTROL_SOCKET}`, ...program];
  }
  return [...wrapper, ...(forwards(spec) ? forwardedArgv(inner, spec.egress, python, map) : inner)];
}

/**
 * The spec's environment with paths mapped. PATH is the image's, after only those of the spec's
 * entries that lie in a mount (a work_dir's `.venv/bin`): the host's own layout (its PATH) never
 * reaches a container, whose image lays its programs out its own way.
 */
function containerEnv(
  env: Readonly<Record<string, string>>,
  map: (path: string) => string,
  imagePath: readonly string[],
): Record<string, string> {
  const mapped: Record<string, string> = {};
  for (const [key, value] of Object.entries(env)) {
    mapped[key] = value.startsWith('/') ? value.split(':').map(map).join(':') : value;
  }
  const mounted = (env.PATH ?? '').split(':').filter((dir) => dir.startsWith('/') && map(dir) !== dir);
  const path = mounted.map(map);
  mapped.PATH = [...path, ...imagePath.filter((dir) => !path.includes(dir))].join(':');
  return mapped;
}
