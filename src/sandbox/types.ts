import type { Duplex, Readable, Writable } from 'node:stream';

export type BackendMode = 'namespace' | 'landlock' | 'subprocess' | 'docker';

/** Everything a backend needs to run one process. Policy builds it; backends only execute it. */
export interface SandboxSpec {
  /** argv[0] is an absolute interpreter path. */
  readonly argv: readonly string[];
  readonly cwd: string;
  readonly env: Readonly<Record<string, string>>;
  /** Directories the code may write (the workspace and, if different, the working dir). */
  readonly writablePaths: readonly string[];
  /**
   * A host directory the code works in (one of writablePaths, beneath CODEXEC_ALLOWED_PATHS): it is
   * never lent to the sandbox user, unlike codexec's own workspaces.
   */
  readonly hostDir?: string;
  /**
   * The server's descriptor of the host directory, where the server is root: what a sandbox binds
   * (namespace: handed to bwrap, `--bind-fd`) or a Landlock rule opens (through /proc) in place of
   * its path, so a rename or a symlink put at the path after policy opened it changes nothing.
   * Absent: the path (an ordinary user's server, whose code runs as itself).
   */
  readonly hostDirFd?: number;
  /**
   * Whom a root server runs the code as: the host directory's owner, an ordinary user. Absent:
   * nobody (65534; landlock mode: a uid of the run's own) for a root server, the server's own uid
   * otherwise.
   */
  readonly runAs?: { readonly uid: number; readonly gid: number };
  /** Extra paths the code must be able to read (the script file, the interpreter's tree). */
  readonly readablePaths: readonly string[];
  /** The operator's mounts (CODEXEC_MOUNTS) the run's principal is given: read-only, at their targets. */
  readonly mounts?: readonly SpecMount[];
  readonly limits: {
    readonly memoryMb: number;
    readonly maxProcs: number;
    readonly maxFileMb: number;
    /** RLIMIT_CPU, soft = hard, so the kernel SIGKILLs at it (one-shot runs); absent for sessions. */
    readonly cpuSeconds?: number;
  };
  /**
   * `allowlist`: no route out but the server's egress proxy (src/egress): the sandbox keeps a
   * network of its own with only loopback (namespace, docker) where a forwarder started before the
   * program (`egress.socket`) relays to the proxy, or may connect to the proxy's port on the host's
   * loopback and nothing else (landlock); TCP is the only internet socket it may create.
   */
  readonly network: 'none' | 'host' | 'allowlist';
  /** Where code reaches the egress proxy: set with network `allowlist`. */
  readonly egress?: EgressEndpoint;
  /** 'pipe' keeps stdin open for drivers; one-shot runs get /dev/null. */
  readonly stdin: 'ignore' | 'pipe';
  /** Open a control channel on the child's fd 3 (session drivers, warm pool). */
  readonly control?: boolean;
  /**
   * A pty session's: where the sandbox lets no program open a terminal (landlock), the backend
   * hands the program one on TERMINAL_FDS, opened before confinement; elsewhere it is ignored
   * (drivers/pty_relay.py opens its own, on the sandbox's devpts).
   */
  readonly terminal?: boolean;
  /**
   * argv is `[python, drivers/warm_python.py]`: a backend may instead fork the driver from a
   * pre-initialised interpreter of the same path (the namespace and landlock backends' zygotes,
   * as root).
   * 'only': fork it or throw NotForkableError (the caller then runs cold).
   */
  readonly zygote?: 'prefer' | 'only';
  /**
   * A one-shot run's end mark (END_MARK_BYTES long): where the backend can, the sandbox writes it
   * on stdout and stderr after the program's last output and reports the program's exit status at
   * once (SandboxedProcess.reported), without waiting for the sandbox's teardown.
   */
  readonly endMark?: string;
  /**
   * Run in a sandbox kept for `key` (execute_command's persistent container, one per principal)
   * that holds `mounts` for its whole life, the first as its workspace; backends that keep none
   * (and runs whose paths fall outside the mounts) start one of their own as usual.
   */
  readonly persistent?: { readonly key: string; readonly mounts: readonly string[] };
}

/** An operator mount of a run. */
export interface SpecMount {
  /**
   * What a sandbox binds or a Landlock rule opens: the directory the server holds open since it
   * started (/proc/<server pid>/fd/<n>), whatever is at its path now.
   */
  readonly source: string;
  /** The directory's host path when the server opened it (a container engine is given this). */
  readonly path: string;
  /** Where the code sees it (landlock mode: `path`, as it has no mount namespace). */
  readonly target: string;
}

/** How a sandbox with network `allowlist` reaches the server's egress proxy. */
export interface EgressEndpoint {
  /**
   * The proxy's Unix socket in the run's workspace: a forwarder run before the program
   * (drivers/egress_forward.py, by `python`) listens on the sandbox's own 127.0.0.1:`port` and
   * relays there. Absent: `port` is the proxy's own on the host's loopback (landlock mode).
   */
  readonly socket?: string;
  /** The loopback port the proxy variables name. */
  readonly port: number;
  /** The Python that runs the forwarder (the engine's python interpreter). */
  readonly python?: string;
  /** Files the sandbox reads to trust the proxy's certificates (CODEXEC_CREDENTIALS's CA). */
  readonly trust?: readonly string[];
}

/** A landlock run's TMPDIR, inside its workspace: `<workspace>/.codexec-tmp-XXXXXX`. */
export const TMP_PREFIX = '.codexec-tmp-';
/**
 * Left in a docker-mode workspace by the container's wrapper: the cgroup limit that stopped the
 * program, and its copy (`.cgroup`), read and removed by the server (container/backend.ts).
 */
export const LIMIT_NOTE = '.codexec-limit';

/** The length of SandboxSpec.endMark. */
export const END_MARK_BYTES = 32;

/** A resource limit that stopped (or starved) the run. */
export type LimitKind = 'memory' | 'processes' | 'cpu' | 'file_size' | 'disk';

export interface Exit {
  /** null when the process died of a signal (or never started). */
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  /** Set when the process could not be started at all. */
  readonly spawnError?: Error;
  /** Set when the backend knows a limit was hit (cgroup OOM kill, pids.max, SIGXCPU, SIGXFSZ). */
  readonly limit?: LimitKind;
}

/** Its streams never emit unhandled 'error' events: the exit reports what happened. */
export interface SandboxedProcess {
  readonly pid: number | undefined;
  readonly stdout: Readable;
  readonly stderr: Readable;
  readonly stdin: Writable | null;
  /** The parent's end of fd 3 when `spec.control` was set; user output never travels here. */
  readonly control: Duplex | null;
  readonly exited: Promise<Exit>;
  /**
   * With spec.endMark, where the backend does it: the program's exit status, reported once the end
   * marks are written (undefined if it never is); the sandbox's exit comes later.
   */
  readonly reported?: Promise<number | undefined>;
  /** Signal every process of the run (process group / sandbox), not just the leader. */
  kill(signal: NodeJS.Signals): void;
  /**
   * Stop (SIGSTOP) every process of the run: none can act again, and none is torn down yet; dispose()
   * kills them. Backends that cannot reach every process leave it out.
   */
  stop?(): void;
  /**
   * stop() holds every process of the run until dispose() kills them, whatever they do: a warm
   * driver that has reported may then wait for its control channel's end instead of exiting, so
   * that its teardown comes after the result, not during it. Left out where the processes end with
   * the driver instead (a container's wrapper kills them as it exits).
   */
  readonly holdsStopped?: boolean;
  /** A limit the backend saw hit so far, for runs that end before the process exits (warm). */
  limitHit?(): LimitKind | undefined;
  /**
   * The sentence naming the bound behind a limit hit, where it is not the run's own (namespace:
   * the parent cgroup of all runs, CODEXEC_TOTAL_*); undefined: the per-run setting.
   */
  limitDetail?(kind: LimitKind): string | undefined;
  /**
   * The host pid of the sandbox's first process, whose fd 0 is the run's stdin, where it is not
   * `pid` (a container's, asked of the engine); undefined where the host cannot see it (gVisor).
   */
  processRoot?(): Promise<number | undefined>;
  /**
   * CPU time the run's processes used so far, in µs, cumulative over the life of what counts it (a
   * reused cgroup's count goes on: take a difference); undefined where the backend cannot tell.
   */
  cpuUsec?(): number | undefined;
  /** Memory the process (namespace: its whole sandbox) uses now, in MB, when the backend knows. */
  memoryMb?(): number | undefined;
  /**
   * Output reaches the server through a relay (a container engine's CLI): a control message the
   * driver sends after its output may arrive before that output does.
   */
  readonly relaysOutput?: boolean;
  /**
   * Where a host path of the spec is seen inside the sandbox, for paths sent over the control
   * channel (a container mounts the workspace at /workspace); absent: the same path.
   */
  insidePath?(hostPath: string): string;
  /** Release what the backend made for this run (cgroups, containers). Safe to call twice. */
  dispose(): Promise<void>;
}

export interface Availability {
  readonly available: boolean;
  /** Why not, and how to fix it. */
  readonly reason?: string;
}

/**
 * What a backend can do, as data: code outside src/sandbox asks these, never which mode it is
 * (`mode` is for reports: results, logs, metrics).
 */
export interface Capabilities {
  /** Code gets a home and temp directory of its own (false: the host's, as in subprocess mode). */
  readonly ownHome: boolean;
  /**
   * How code can reach the egress proxy: `socket`, a Unix socket in its workspace relayed to its
   * own loopback by a forwarder; `port`, the proxy's port on the host's loopback (Landlock confines
   * TCP by port, so a host outside that answers on the same port is reachable too); `none`, code
   * has the host network, which no proxy can confine.
   */
  readonly egress: 'socket' | 'port' | 'none';
  /**
   * A session's background processes are host processes that outlive its driver's sandbox: the
   * server kills their process groups itself when the session ends.
   */
  readonly processesOutlive: boolean;
  /**
   * A pty session's terminal: `own`, drivers/pty_relay.py opens one on the sandbox's devpts;
   * `handed`, the backend hands one over, opened before confinement (SandboxSpec.terminal).
   */
  readonly terminal: 'own' | 'handed';
  /** kill() signals a process group, not every process of the run (an interrupt must be relayed). */
  readonly signalsGroup: boolean;
  /**
   * Sessions run interpreters of their own (a container's image): packages for a session are
   * installed by its sandbox's own pip or npm, and host-side installs need another sandbox.
   */
  readonly ownInterpreters: boolean;
  /** The setting a memory limit's note names where it is not CODEXEC_MEMORY_LIMIT_MB. */
  readonly memorySetting?: string;
}

export interface SandboxBackend {
  /** The mode's name, for reports; decisions go by `capabilities`. */
  readonly mode: BackendMode;
  readonly capabilities: Capabilities;
  probe(): Promise<Availability>;
  spawn(spec: SandboxSpec): SandboxedProcess;
  /** Release what the backend keeps across runs (persistent containers); runs are the engine's. */
  shutdown?(): Promise<void>;
  /**
   * Whether spawn() can ever fork a `zygote` driver of `interpreter` (python by default) here
   * (false: it always starts one).
   */
  forksDrivers?(interpreter?: 'python' | 'node' | 'bash'): boolean;
  /**
   * Wait (at most `ms`) for a driver to fork for `spec` and set it aside for spawn(spec), this very
   * object: under load, the next fork costs a fraction of the cold start spawn() would fall back to.
   */
  reserveFork?(spec: SandboxSpec, ms: number): Promise<void>;
  /**
   * Wait (at most `ms`) for what spawn(spec), this very object, needs to start without forking the
   * server, and set it aside for it (a pre-forked launcher in namespace and landlock modes).
   */
  reserveLauncher?(spec: SandboxSpec, ms: number): Promise<void>;
}

/** spawn() with `zygote: 'only'` and no zygote ready to fork the driver: the caller runs cold. */
export class NotForkableError extends Error {
  constructor() {
    super('no zygote is ready to fork this driver');
    this.name = 'NotForkableError';
  }
}

/** Where a backend hands over a terminal (SandboxSpec.terminal): its master and its slave. */
export const TERMINAL_FDS = { master: 10, slave: 11 } as const;
