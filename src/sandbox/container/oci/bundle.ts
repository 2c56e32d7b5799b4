// One run's OCI bundle configuration (config.json) as data. It starts from the configuration the
// engine wrote for a template container of the same confinement (template.ts): its seccomp
// profile, masked and read-only paths, devices, namespaces, capabilities, init and memory and CPU
// limits stay as the engine made them. The run's own parts are written in: its process (argv,
// environment, working directory, user, rlimits), its mounts, its pids bound and its cgroup; and
// what the engine keeps per container and would otherwise be shared between runs (/dev/shm) is
// the run's own.

import type { Mount } from '../args.js';
import { WORKSPACE } from '../args.js';

/** Where every read-only mount of a run lies (args.ts): a tmpfs of the run's own. */
export const OPT_INSIDE = '/opt/codexec';

export interface OciMount {
  readonly destination: string;
  readonly type: string;
  readonly source: string;
  readonly options?: readonly string[];
}

interface OciRlimit {
  readonly type: string;
  readonly hard: number;
  readonly soft: number;
}

/** The parts of an OCI configuration this file reads or writes; the rest passes through. */
export interface OciConfig {
  readonly process: {
    readonly user: {
      readonly uid: number;
      readonly gid: number;
      readonly umask?: number;
      readonly additionalGids?: readonly number[];
    };
    readonly args: readonly string[];
    readonly env?: readonly string[];
    readonly cwd: string;
    readonly rlimits?: readonly OciRlimit[];
    readonly [key: string]: unknown;
  };
  readonly root: { readonly path: string; readonly readonly?: boolean };
  readonly mounts: readonly OciMount[];
  readonly linux: {
    readonly cgroupsPath?: string;
    readonly resources?: { readonly pids?: { readonly limit: number }; readonly [key: string]: unknown };
    readonly namespaces?: ReadonlyArray<{ readonly type: string; readonly path?: string }>;
    readonly [key: string]: unknown;
  };
  readonly [key: string]: unknown;
}

/** What one run puts in the template's configuration. */
export interface RunParts {
  readonly argv: readonly string[];
  readonly env: Readonly<Record<string, string>>;
  readonly cwd: string;
  readonly user: { readonly uid: number; readonly gid: number };
  readonly mounts: readonly Mount[];
  readonly cgroupsPath: string;
  readonly pids: number;
  /** The rlimits that vary by run (the others are the template's: the engine's ulimits). */
  readonly rlimits: { readonly nproc: number; readonly fsize: number };
}

/** Mounts the engine made for the template's own files, replaced for each run (see header). */
const REPLACED = new Set(['/dev/shm']);

/** The run's /dev/shm: a tmpfs of its own, as large as the engine's default. */
const SHM: OciMount = {
  destination: '/dev/shm',
  type: 'tmpfs',
  source: 'shm',
  options: ['rw', 'nosuid', 'noexec', 'nodev', 'mode=1777', 'size=65536k'],
};

/**
 * Holds the mount points of a run's read-only paths, which the read-only root has no room for;
 * owned by root, so the code cannot write it.
 */
const OPT: OciMount = {
  destination: OPT_INSIDE,
  type: 'tmpfs',
  source: 'tmpfs',
  options: ['rw', 'nosuid', 'nodev', 'mode=755', 'size=1m'],
};

/**
 * Whether a run's mounts fit the template's root, read-only and shared by every run: only the
 * workspace and what lies under /opt/codexec (a run that keeps a host directory at its own path
 * would need a mount point there, which would show in every later run's root).
 */
export function fitsTemplate(mounts: readonly Mount[]): boolean {
  return mounts.every((mount) => mount.inside === WORKSPACE || mount.inside.startsWith(`${OPT_INSIDE}/`));
}

/** The engine's init before the program (`--init`): the template's argv without its program. */
export function initPrefix(template: OciConfig, program: readonly string[]): string[] {
  const args = template.process.args;
  const tail = args.slice(args.length - program.length);
  if (tail.length !== program.length || tail.some((arg, i) => arg !== program[i]))
    throw new Error(`the template container's argv does not end with its program: ${args.join(' ')}`);
  return args.slice(0, args.length - program.length);
}

export function bundleConfig(template: OciConfig, init: readonly string[], run: RunParts): OciConfig {
  if (!fitsTemplate(run.mounts)) throw new TypeError('a run mounts a path outside the template root');
  const { uid, gid } = run.user;
  return {
    ...template,
    process: {
      ...template.process,
      user: { uid, gid, umask: template.process.user.umask ?? 0o22, additionalGids: [gid] },
      args: [...init, ...run.argv],
      env: mergeEnv(template.process.env ?? [], run.env),
      cwd: run.cwd,
      rlimits: rlimits(template.process.rlimits ?? [], run.rlimits),
    },
    mounts: [
      ...template.mounts.filter((mount) => !REPLACED.has(mount.destination)),
      SHM,
      OPT,
      ...run.mounts.map(bind),
    ],
    linux: {
      ...template.linux,
      cgroupsPath: run.cgroupsPath,
      resources: { ...template.linux.resources, pids: { limit: run.pids } },
    },
  };
}

function bind(mount: Mount): OciMount {
  // As the engine binds a volume.
  return {
    destination: mount.inside,
    type: 'bind',
    source: mount.host,
    options: [mount.writable ? 'rw' : 'ro', 'rprivate', 'rbind'],
  };
}

/** The image's environment (the template's) with the run's over it, as the engine merges `--env`. */
function mergeEnv(base: readonly string[], own: Readonly<Record<string, string>>): string[] {
  const merged = new Map<string, string>();
  for (const entry of base) {
    const at = entry.indexOf('=');
    if (at > 0) merged.set(entry.slice(0, at), entry.slice(at + 1));
  }
  for (const [key, value] of Object.entries(own)) merged.set(key, value);
  return [...merged].map(([key, value]) => `${key}=${value}`);
}

function rlimits(base: readonly OciRlimit[], own: RunParts['rlimits']): OciRlimit[] {
  const set = (type: string, value: number): OciRlimit => ({ type, hard: value, soft: value });
  const mine = [set('RLIMIT_NPROC', own.nproc), set('RLIMIT_FSIZE', own.fsize)];
  const types = new Set(mine.map((limit) => limit.type));
  return [...base.filter((limit) => !types.has(limit.type)), ...mine];
}
