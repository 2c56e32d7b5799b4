// What this host offers the namespace and landlock backends, detected once (synchronously, no process spawned):
// the tools on PATH, the seccomp program, the cgroup layout. `doctor` prints the same facts.

import { accessSync, constants } from 'node:fs';
import { homedir, release, userInfo } from 'node:os';
import { prepareCgroups } from './cgroup-layout.js';
import type { CgroupTotals } from './cgroup-parent.js';
import type { CgroupLayout } from './cgroups.js';
import { seccompArch } from './seccomp.js';
import { findOnPath, hostSystemMounts, type SystemMount } from './system.js';

/** The programs a namespace sandbox is built with (bwrap's command line, namespace/args.ts). */
export interface Tools {
  readonly bwrap: string;
  /** Present when the server runs as root: drops to `identity` inside the namespaces. */
  readonly setpriv?: string;
  readonly prlimit?: string;
}

export interface Layer {
  readonly name: string;
  readonly ok: boolean;
  /** What was found, or why not and how to fix it. */
  readonly detail: string;
  /** A missing required layer makes the backend unavailable; others weaken it. */
  readonly required: boolean;
}

export interface HostSetup {
  readonly tools?: Tools;
  readonly system: readonly SystemMount[];
  readonly root: boolean;
  readonly cgroups?: CgroupLayout;
  /** For pre-started launchers (bash's readarray -d); without it every run starts directly. */
  readonly bash?: string;
  /** Host Python for the forker (drivers/forker.py); without it launchers are bash processes. */
  readonly python?: string;
  /** The placeholder a zygote's sandbox runs where the zygote cannot run its own (`cat`). */
  readonly cat?: string;
  /** RLIMIT_NPROC is counted per user namespace (ucounts, Linux >= 5.14): namespace/args.ts nprocInside. */
  readonly nprocPerUserNamespace: boolean;
  /** Home directories of the server's user: never visible in a sandbox. */
  readonly privateDirs: readonly string[];
  readonly layers: readonly Layer[];
  /** The first missing required layer, as a sentence. */
  readonly unavailable?: string;
}

export interface DetectOptions {
  readonly cgroups: boolean;
  /** What all runs together may use (the parent cgroup's limits). */
  readonly totals?: CgroupTotals;
}

/** Without settings (tests, tools): bounds a machine's runs could not reach anyway. */
const UNBOUNDED: CgroupTotals = { memoryMb: 16_777_216, maxProcs: 4_194_304 };

export function detectHost(options: DetectOptions = { cgroups: true }): HostSetup {
  const root = process.getuid?.() === 0;
  const nprocPerUserNamespace = kernelAtLeast(release(), 5, 14);
  // Without cgroups: RLIMIT_NPROC on the sandbox uid of a root server, or inside an ordinary
  // user's sandbox where the kernel counts it per user namespace (namespace/args.ts nprocInside).
  const nproc = root || nprocPerUserNamespace;
  const found = toolLayers(root, nproc);
  const { cgroups, layer } = cgroupLayer(options, nproc);
  const bashPath = findOnPath('bash');
  // The system one first: a version manager's shim on PATH may start slowly or not at all as root.
  const pythonPath =
    ['/usr/bin/python3', '/usr/local/bin/python3'].find(isExecutable) ?? findOnPath('python3');
  const layers = [...found.layers, layer, ...(cgroups ? [launcherLayer(pythonPath)] : [])];
  const missing = layers.find((each) => each.required && !each.ok);
  return {
    ...(found.tools && { tools: found.tools }),
    system: hostSystemMounts(),
    root,
    ...(cgroups && { cgroups }),
    ...(bashPath && { bash: bashPath }),
    ...(pythonPath && { python: pythonPath }),
    ...(root && { cat: findOnPath('cat') ?? '/bin/cat' }),
    nprocPerUserNamespace,
    privateDirs: [homedir(), ...passwdHome()],
    layers,
    ...(missing && { unavailable: `${missing.name}: ${missing.detail}` }),
  };
}

/** bubblewrap, setpriv (a root server's), seccomp and prlimit: found or not, and the tools found. */
function toolLayers(root: boolean, nproc: boolean): { layers: Layer[]; tools: Tools | undefined } {
  const layers: Layer[] = [];
  const bwrap = findOnPath('bwrap');
  layers.push({
    name: 'bubblewrap',
    ok: bwrap !== undefined,
    required: true,
    detail: bwrap ?? 'bwrap not found; install it: apt-get install bubblewrap (dnf/pacman: bubblewrap)',
  });
  const setpriv = root ? findOnPath('setpriv') : undefined;
  if (root) {
    layers.push({
      name: 'setpriv (drop root)',
      ok: setpriv !== undefined,
      required: true,
      detail: setpriv
        ? `${setpriv}; code runs as uid 65534 (landlock: a uid of the run's own; or the working dir's owner), never host root`
        : 'setpriv not found (util-linux); install util-linux, or run codexec as a non-root user',
    });
  }
  const arch = seccompArch();
  layers.push({
    name: 'seccomp',
    ok: arch !== undefined,
    required: true,
    detail: arch
      ? `BPF filter for ${arch === 'x64' ? 'x86_64' : 'aarch64'}`
      : `no seccomp filter for ${process.arch}; only x86_64 and aarch64 are supported — use CODEXEC_SANDBOX_MODE=docker or subprocess`,
  });
  const prlimit = findOnPath('prlimit');
  layers.push({
    name: 'rlimits',
    ok: prlimit !== undefined,
    required: false,
    detail: prlimit
      ? `${prlimit}: AS, CPU, FSIZE, NOFILE, CORE=0 (and DATA when no memory cgroup${nproc ? ', NPROC when no pids cgroup' : ''})`
      : 'prlimit not found (util-linux); runs have no rlimits — install util-linux',
  });
  const tools: Tools | undefined =
    bwrap && (!root || setpriv)
      ? { bwrap, ...(setpriv && { setpriv }), ...(prlimit && { prlimit }) }
      : undefined;
  return { layers, tools };
}

/** The runs' parent cgroup, prepared where this process may, and its layer. */
function cgroupLayer(options: DetectOptions, nproc: boolean): { cgroups?: CgroupLayout; layer: Layer } {
  try {
    if (!options.cgroups) throw new Error('disabled by the caller');
    const totals = options.totals ?? UNBOUNDED;
    const cgroups = prepareCgroups(totals);
    const layer = {
      name: 'cgroups',
      ok: true,
      required: false,
      detail:
        `v${cgroups.version} memory + pids per run, under ${cgroups.memory}, which bounds all runs ` +
        `together: ${totals.memoryMb} MB (CODEXEC_TOTAL_MEMORY_MB), ${totals.maxProcs} processes ` +
        '(CODEXEC_TOTAL_MAX_PROCS)',
    };
    return { cgroups, layer };
  } catch (error) {
    const layer = {
      name: 'cgroups',
      ok: false,
      required: false,
      detail:
        `cgroups not writable here (${(error as Error).message}): no per-run memory/pids cgroup ` +
        `(falling back to RLIMIT_DATA${nproc ? ' and RLIMIT_NPROC' : ''}) and no bound on all runs together ` +
        '(CODEXEC_TOTAL_MEMORY_MB, CODEXEC_TOTAL_MAX_PROCS are not enforced) — run as root or with a ' +
        'delegated cgroup v2 subtree',
    };
    return { layer };
  }
}

/** Who starts the pre-forked launchers (there are some only where the host has cgroups). */
function launcherLayer(python: string | undefined): Layer {
  return {
    name: 'launchers',
    ok: true,
    required: false,
    detail: python
      ? `pre-forked by ${python} (drivers/forker.py): the server never forks itself per run`
      : 'bash launchers spawned by the server (no host python3 to fork them)',
  };
}

/** Whether a kernel release (`6.1.0-13-amd64`) is at least major.minor. */
export function kernelAtLeast(version: string, major: number, minor: number): boolean {
  const [have, haveMinor] = version.split(/[.-]/, 2).map(Number);
  if (have === undefined || haveMinor === undefined || Number.isNaN(have) || Number.isNaN(haveMinor))
    return false;
  return have > major || (have === major && haveMinor >= minor);
}

/** The passwd entry's home, where there is one (an arbitrary container uid may have none). */
function passwdHome(): string[] {
  try {
    return [userInfo().homedir];
  } catch {
    return [];
  }
}

function isExecutable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}
