// What the landlock backend keeps per server process: its launcher on disk (confine.ts), the
// kernel's Landlock ABI, the system paths every run may read, and the scripts (rules.ts) that
// confine a run as the launcher starts it, never in the server process.
import { spawnSync } from 'node:child_process';
import { chmodSync, chownSync, closeSync, mkdtempSync, openSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  BOUND_ETC,
  bindSource,
  etcEntries,
  findOnPath,
  interpreterMount,
  systemMounts,
} from '../host/index.js';
import { type SandboxSpec, TMP_PREFIX } from '../types.js';
import { confineProgram } from './confine.js';
import { makeLauncherDir } from './launcher-dir.js';
import {
  type Access,
  abiScript,
  type Launch,
  landlockScript,
  launchScript,
  networkRefusal,
} from './rules.js';

/** Device files every run may read and write. */
const DEVICES = ['/dev/null', '/dev/zero', '/dev/full', '/dev/random', '/dev/urandom'];

/**
 * The launcher and the facts of this host, made on first use and kept for the server's life: one
 * per process (confiner()), whichever backends use it.
 */
export class Confiner {
  private dir: string | undefined;
  private launcher: string | undefined;
  private abiFound: number | undefined;
  private system: { executable: string[]; readable: string[] } | undefined;

  /**
   * The launcher's path, written once per server into a directory of its own (0700), removed at
   * exit, or by the next server if this one is killed first (launcher-dir.ts).
   */
  program(): string {
    if (this.launcher) return this.launcher;
    const program = confineProgram();
    if (!program)
      throw new Error(`no confine launcher for ${process.arch}: sandbox mode landlock needs x86-64`);
    this.dir = makeLauncherDir(tmpdir());
    const dir = this.dir;
    process.once('exit', () => rmSync(dir, { recursive: true, force: true }));
    const path = join(dir, 'codexec-confine');
    writeFileSync(path, program, { mode: 0o500 });
    chmodSync(path, 0o500);
    this.launcher = path;
    return path;
  }

  /** The kernel's Landlock ABI (0: none, or the launcher cannot run here), asked once. */
  abi(): number {
    if (this.abiFound === undefined) {
      // Its status: the ABI, or an error's number modulo 256 (ENOSYS: 218, EOPNOTSUPP: 161).
      const status = this.runScript(abiScript());
      this.abiFound = status >= 1 && status < 64 ? status : 0;
    }
    return this.abiFound;
  }

  private scripts = 0;
  /** Why the launcher could not be written, if it could not. */
  private problem: string | undefined;

  /**
   * Run a script with the launcher, synchronously, as the server's user: its exit status (its own,
   * or 126 when a call failed; -1 when the launcher could not run). For probes and one-off setup.
   */
  runScript(script: Buffer): number {
    let program: string;
    try {
      program = this.program();
    } catch (error) {
      this.problem = (error as Error).message;
      return -1;
    }
    const path = join(this.dir as string, `script-${this.scripts++}`);
    writeFileSync(path, script, { mode: 0o600 });
    const fd = openSync(path, 'r');
    try {
      const truePath = findOnPath('true') ?? '/bin/true';
      const result = spawnSync(program, [truePath], {
        stdio: ['ignore', 'ignore', 'ignore', 'ignore', fd],
        env: {},
        timeout: 5000,
      });
      return result.status ?? -1;
    } finally {
      closeSync(fd);
      rmSync(path, { force: true });
    }
  }

  /** Why landlock mode cannot run here, or undefined. */
  unavailable(): string | undefined {
    if (process.platform !== 'linux') return 'Landlock is Linux only';
    if (!confineProgram()) return `no confine launcher for ${process.arch} (x86-64 only)`;
    const abi = this.abi();
    if (this.problem)
      return `could not write the confine launcher into ${tmpdir()} (TMPDIR): ${this.problem}`;
    if (abi === 0)
      return (
        'the kernel offers no Landlock (Linux >= 5.13 with CONFIG_SECURITY_LANDLOCK=y and "landlock" in ' +
        'its lsm= boot list), or the launcher cannot run from ' +
        tmpdir()
      );
    return undefined;
  }

  /** Why this host cannot confine `spec`'s network (the egress allowlist), or undefined. */
  refusal(spec: SandboxSpec): string | undefined {
    // No mount namespace here: code reads a mount at its own path (config/mounts.ts says so at start).
    const moved = spec.mounts?.find((mount) => mount.target !== mount.path);
    if (moved)
      return `landlock mode has no mount namespace: CODEXEC_MOUNTS' ${moved.target} would be read at ${moved.path}; set its target to its source`;
    if (spec.network !== 'allowlist') return undefined;
    // The port would be the forwarder's in a sandbox's own loopback, which a landlock run has not.
    if (spec.egress?.socket !== undefined)
      return "the network allowlist reaches the egress proxy at its port on the host's loopback in this mode, not through a Unix socket";
    return networkRefusal(this.abi(), spec.network, spec.egress?.port);
  }

  /**
   * What a run may read and write: the system, the interpreter's install (as the namespace sandbox
   * mounts it: never a private directory's whole), its spec's paths, its own temporary directory.
   */
  access(spec: SandboxSpec, tmp: string | undefined, privateDirs: readonly string[]): Access {
    this.system ??= systemPaths();
    const interpreter = spec.argv[0] ? [interpreterMount(spec.argv[0], privateDirs)] : [];
    return {
      executable: [...this.system.executable, ...interpreter, ...spec.readablePaths],
      // The operator's mounts, through the descriptors the server holds: read, never execute.
      readable: [...this.system.readable, ...(spec.mounts ?? []).map((mount) => mount.source)],
      // The host directory by its descriptor: the rule is on the directory policy opened.
      writable: [...spec.writablePaths.map((path) => bindSource(spec, path)), ...(tmp ? [tmp] : [])],
      devices: DEVICES,
      network: spec.network,
      ...(spec.network === 'allowlist' && spec.egress && { egressPort: spec.egress.port }),
    };
  }

  /** A cold run's script: confine, drop, exec the program with the run's environment. */
  launch(launch: Omit<Launch, 'abi'>): Buffer {
    return launchScript({ ...launch, abi: this.abi() });
  }

  /** The Landlock part alone, for a zygote's fork (drivers/zygote.py). */
  landlockOnly(access: Access): Buffer {
    return landlockScript(this.abi(), access);
  }
}

/**
 * A run's own temporary directory (its TMPDIR): 0700, the sandbox user's, inside its workspace
 * (where the disk bounds count it; artifact lists leave it out: engine/generated.ts), else in the
 * host's. The backend removes it with the run.
 */
export function ownTmp(
  spec: SandboxSpec,
  identity: { readonly uid: number; readonly gid: number } | undefined,
) {
  const dir = mkdtempSync(join(spec.writablePaths[0] ?? tmpdir(), TMP_PREFIX));
  if (identity) chownSync(dir, identity.uid, identity.gid);
  return dir;
}

let shared: Confiner | undefined;

/** This process's Confiner: the launcher is written, and the ABI asked, once. */
export function confiner(): Confiner {
  shared ??= new Confiner();
  return shared;
}

/** The kernel's Landlock ABI, 0 when there is none (or no launcher for this arch). */
export function landlockAbi(): number {
  return confiner().abi();
}

/** The system paths of the namespace sandbox, as Landlock rules: read and execute, /etc and /proc read. */
function systemPaths(): { executable: string[]; readable: string[] } {
  const executable = systemMounts('/', '/etc')
    .filter((mount) => mount.kind === 'ro-bind' && mount.path !== '/etc' && !mount.path.startsWith('/etc/'))
    .map((mount) => mount.path);
  const etc = [...etcEntries('/'), ...BOUND_ETC].map((name) => `/etc/${name}`);
  return { executable, readable: [...etc, '/proc'] };
}
