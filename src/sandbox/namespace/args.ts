// The sandbox command line, built as data: (prlimit) → bwrap → (drop program or setpriv) → argv.
// Pure: no I/O, so every flag is unit-tested without spawning anything.
import { readlinkSync } from 'node:fs';
import { dirname } from 'node:path';
import {
  FORWARDER,
  forwardedArgv,
  forwards,
  HOST_DIR_FD,
  interpreterMount,
  type Rlimit,
  runRlimits,
  SECCOMP_FD,
  type SystemMount,
  type Tools,
} from '../host/index.js';
import type { SandboxSpec } from '../types.js';
import { dropsTo } from './drop.js';
import type { View } from './views.js';

const MIB = 1024 * 1024;

export interface BwrapOptions {
  readonly tools: Tools;
  readonly system: readonly SystemMount[];
  /** Unprivileged uid/gid the code runs as, when the server is root (bwrap is then privileged). */
  readonly identity?: { readonly uid: number; readonly gid: number };
  /**
   * The drop program's path in the sandbox (drop.ts), which then drops to `identity` instead of
   * setpriv, for the ids it takes.
   */
  readonly drop?: string;
  /** Memory and pids are enforced by a cgroup (which the run starts in): no rlimit fallbacks. */
  readonly cgroup: boolean;
  /**
   * Who sets the rlimits: prlimit in front of bwrap (default), or the caller, a launcher that
   * applies rlimitsFor() itself (setrlimit when forked by the forker, bash's ulimit) and saves an
   * exec.
   */
  readonly rlimitsBy?: 'prlimit' | 'caller';
  /** A seccomp program will be readable on SECCOMP_FD. */
  readonly seccomp: boolean;
  /** Seconds of CPU time (RLIMIT_CPU, soft and hard); none for long-lived drivers. */
  readonly cpuSeconds?: number;
  /** Directories an interpreter's prefix may never expose (the server user's home). */
  readonly privateDirs?: readonly string[];
  /**
   * The sandbox of a zygote run (drivers/zygote.py): spec.argv is only a placeholder that keeps it
   * up; the program's process joins its namespaces and confines itself (uid, capabilities,
   * seccomp), so bwrap runs as root without setpriv, seccomp or any capability kept.
   */
  readonly placeholder?: boolean;
  /**
   * This kernel counts RLIMIT_NPROC per user namespace (Linux >= 5.14, host/setup.ts): an ordinary
   * user's sandbox then gets its process limit inside its own namespace (nprocInside).
   */
  readonly nprocPerUserNamespace?: boolean;
  /**
   * One bind for several files of a directory the sandbox reads (codexec's drivers, views.ts):
   * `dir`, and the copy of the files given, or undefined to bind each.
   */
  readonly views?: { readonly dir: string; of(files: readonly string[]): View | undefined };
}

/**
 * Whether the run's drop program reports its end (`drop -r`): it forks, and after the program has
 * exited writes spec.endMark on stdout and stderr and the status on REPORT_FD, before the sandbox's
 * teardown. It is one more process of the run's (pids.max and RLIMIT_NPROC count it).
 */
export function reportsEnd(
  spec: Pick<SandboxSpec, 'endMark'>,
  options: Pick<BwrapOptions, 'identity' | 'drop' | 'placeholder'>,
): boolean {
  const { identity } = options;
  return (
    spec.endMark !== undefined &&
    identity !== undefined &&
    !options.placeholder &&
    dropsTo(identity) &&
    options.drop !== undefined
  );
}

/** bwrap's command line; `ops`: the filesystem's, where the caller has them already (filesystemOps). */
export function buildBwrapArgs(spec: SandboxSpec, options: BwrapOptions, ops?: readonly FsOp[]): string[] {
  const { tools, identity } = options;
  if (spec.argv.length === 0) throw new TypeError('SandboxSpec.argv is empty');
  const placeholder = options.placeholder === true;
  const drop = identity && !placeholder && dropsTo(identity) ? options.drop : undefined;
  if (identity && !placeholder && !tools.setpriv && !drop)
    throw new TypeError('dropping to an unprivileged uid needs setpriv or the drop program');
  const argv: string[] = [];
  if (tools.prlimit && options.rlimitsBy !== 'caller') {
    argv.push(
      tools.prlimit,
      ...rlimitsFor(spec, options).map((limit) => `--${limit.prlimit}=${limit.value}`),
      '--',
    );
  }
  argv.push(tools.bwrap, ...namespaceFlags(spec, identity !== undefined, placeholder));
  argv.push('--die-with-parent', '--new-session', '--hostname', 'codexec', '--clearenv');
  for (const [name, value] of Object.entries(spec.env)) argv.push('--setenv', name, value);
  argv.push(...bwrapFilesystem(ops ?? filesystemOps(spec, options, identity !== undefined)));
  // A placeholder runs as root without capabilities: it could not enter a workspace lent away.
  argv.push('--chdir', placeholder ? '/' : spec.cwd);
  if (options.seccomp && !placeholder) argv.push('--seccomp', String(SECCOMP_FD));
  if (identity && drop) {
    argv.push(drop, ...(reportsEnd(spec, options) ? ['-r'] : []), String(identity.uid), String(identity.gid));
  } else if (identity && !placeholder) {
    argv.push(
      tools.setpriv as string,
      `--reuid=${identity.uid}`,
      `--regid=${identity.gid}`,
      '--clear-groups',
      // Every capability set empty, as the drop program leaves them (drop.ts).
      '--inh-caps=-all',
      '--ambient-caps=-all',
      '--bounding-set=-all',
      '--no-new-privs',
      '--',
    );
  }
  const nproc = nprocInside(spec, options);
  if (nproc !== undefined) argv.push(tools.prlimit as string, `--nproc=${nproc}`, '--');
  argv.push(...(forwards(spec) ? forwardedArgv(spec.argv, spec.egress) : spec.argv));
  return argv;
}

/**
 * RLIMIT_NPROC for the run of a server without root or cgroups, set inside the sandbox. The limit
 * counts the processes of a uid, which for an ordinary user's sandbox is the user's own: set in
 * front of bwrap it would count every process of theirs on the host. Set after bwrap has made the
 * sandbox's user namespace, a kernel that counts per namespace (>= 5.14) counts only the
 * sandbox's, bwrap's init (pid 1) among them. Without it, a fork bomb met no bound but the timeout.
 */
export function nprocInside(spec: SandboxSpec, options: BwrapOptions): number | undefined {
  const { identity, cgroup, placeholder, nprocPerUserNamespace, tools } = options;
  if (identity || cgroup || placeholder || !nprocPerUserNamespace) return undefined;
  // prlimit runs in the sandbox: from a system dir it sees.
  if (!tools.prlimit || !covered(tools.prlimit, hostPaths(options.system))) return undefined;
  return spec.limits.maxProcs + 1;
}

/** The run's rlimits (host/rlimits.ts), the reporting drop program counted among its processes. */
export function rlimitsFor(
  spec: SandboxSpec,
  options: Pick<BwrapOptions, 'cgroup' | 'identity' | 'cpuSeconds' | 'drop' | 'placeholder'>,
): Rlimit[] {
  const { cgroup, identity, cpuSeconds } = options;
  return runRlimits(spec, {
    cgroup,
    ...(identity && { identity }),
    ...(cpuSeconds !== undefined && { cpuSeconds }),
    extraProcs: extraProcs(spec, options),
  });
}

/** Processes of the run's that are not the code's: the reporting drop program. */
export function extraProcs(
  spec: SandboxSpec,
  options: Pick<BwrapOptions, 'identity' | 'drop' | 'placeholder'>,
): number {
  return reportsEnd(spec, options) ? 1 : 0;
}

function namespaceFlags(spec: SandboxSpec, privileged: boolean, placeholder: boolean): string[] {
  // The egress allowlist keeps a network of its own too: only loopback, where its forwarder listens.
  const net = spec.network !== 'host';
  if (privileged) {
    // bwrap runs as real root: no user namespace (it would map the code back to host root);
    // the drop program (or setpriv) drops to the unprivileged uid instead. Only the capabilities
    // it and --chdir need survive (CAP_SETPCAP to empty the bounding set, which bwrap leaves full
    // here), and it clears every set before the code starts. A placeholder needs none: the
    // zygote's process confines itself.
    const kept = placeholder ? [] : ['CAP_SETUID', 'CAP_SETGID', 'CAP_DAC_READ_SEARCH', 'CAP_SETPCAP'];
    return [
      '--unshare-ipc',
      '--unshare-pid',
      '--unshare-uts',
      '--unshare-cgroup-try',
      ...(net ? ['--unshare-net'] : []),
      '--cap-drop',
      'ALL',
      ...kept.flatMap((cap) => ['--cap-add', cap]),
    ];
  }
  return [
    '--unshare-all',
    '--unshare-user',
    '--disable-userns',
    ...(net ? [] : ['--share-net']),
    '--cap-drop',
    'ALL',
  ];
}

/**
 * The sandbox's filesystem as operations in bwrap's order (each a bwrap flag): one description that
 * bwrap's command line (bwrapFilesystem) and a zygote's nest (nest.ts) are both made from.
 */
export type FsOp =
  | { readonly op: 'ro-bind' | 'bind'; readonly source: string; readonly path: string }
  | { readonly op: 'bind-fd'; readonly fd: number; readonly path: string }
  | { readonly op: 'symlink'; readonly target: string; readonly path: string }
  | { readonly op: 'dir' | 'proc' | 'dev'; readonly path: string }
  | { readonly op: 'tmpfs'; readonly path: string; readonly mode: string; readonly bytes: string };

export function filesystemOps(
  spec: SandboxSpec,
  { system, privateDirs = [], views }: Pick<BwrapOptions, 'system' | 'privateDirs' | 'views'>,
  privileged: boolean,
): FsOp[] {
  const ops: FsOp[] = [];
  for (const mount of system) {
    if (mount.kind === 'symlink') ops.push({ op: 'symlink', target: mount.target, path: mount.path });
    else if (mount.kind === 'dir') ops.push({ op: 'dir', path: mount.path });
    else ops.push({ op: 'ro-bind', source: mount.source ?? mount.path, path: mount.path });
  }
  const bytes = String(spec.limits.memoryMb * MIB);
  ops.push({ op: 'proc', path: '/proc' }, { op: 'dev', path: '/dev' });
  ops.push(
    { op: 'tmpfs', mode: '1777', bytes, path: '/tmp' },
    { op: 'tmpfs', mode: '1777', bytes, path: '/dev/shm' },
  );
  const systemRoots = hostPaths(system);
  const interpreters = [
    interpreterMount(spec.argv[0] as string, privateDirs),
    ...(forwards(spec) ? [interpreterMount(spec.egress.python, privateDirs), FORWARDER] : []),
  ];
  const readable = [
    ...interpreters.filter((path) => !covered(path, systemRoots)),
    ...spec.readablePaths,
  ].filter((path) => !covered(path, spec.writablePaths) && !covered(path, systemRoots));
  // Several files of the drivers' directory: one copy of just them, bound at the directory.
  const viewed = views ? readable.filter((path) => path.startsWith(`${views.dir}/`)) : [];
  const view = viewed.length > 1 ? views?.of(viewed) : undefined;
  for (const path of readable)
    if (!(view && viewed.includes(path))) ops.push(...parentDir(path), { op: 'ro-bind', source: path, path });
  if (view) ops.push(...parentDir(view.target), { op: 'ro-bind', source: view.source, path: view.target });
  for (const path of spec.writablePaths) {
    // The host directory held by policy: bwrap gets its descriptor (HOST_DIR_FD), never its name.
    if (path === spec.hostDir && spec.hostDirFd !== undefined)
      ops.push(...parentDir(path), { op: 'bind-fd', fd: HOST_DIR_FD, path });
    else ops.push(...parentDir(path), { op: 'bind', source: path, path });
  }
  // The operator's mounts, last, read-only at their targets: by the descriptor the server holds.
  // An ordinary user's bwrap, in a user namespace of its own, cannot reach the server's
  // /proc/<pid>/fd: it is given the held directory's path as of now (config/mounts.ts keeps
  // sources out of what code may write, so no run can rename one on the way).
  for (const mount of spec.mounts ?? []) {
    const source = privileged ? mount.source : readlinkSync(mount.source);
    ops.push(...parentDir(mount.target), { op: 'ro-bind', source, path: mount.target });
  }
  return ops;
}

/** The operations as bwrap's flags. */
function bwrapFilesystem(ops: readonly FsOp[]): string[] {
  return ops.flatMap((op) => {
    switch (op.op) {
      case 'ro-bind':
      case 'bind':
        return [`--${op.op}`, op.source, op.path];
      case 'bind-fd':
        return ['--bind-fd', String(op.fd), op.path];
      case 'symlink':
        return ['--symlink', op.target, op.path];
      case 'tmpfs':
        return ['--perms', op.mode, '--size', op.bytes, '--tmpfs', op.path];
      default:
        return [`--${op.op}`, op.path];
    }
  });
}

const covered = (path: string, roots: readonly string[]) =>
  roots.some((root) => path === root || path.startsWith(root.endsWith('/') ? root : `${root}/`));

/** The host paths a sandbox sees at the same place: a copy (/etc) covers nothing of the host's tree. */
const hostPaths = (system: readonly SystemMount[]) =>
  system.filter((m) => m.kind === 'ro-bind' && !m.source).map((m) => m.path);

/** bwrap gives a bind's missing parents the source's mode; a 0700 source would hide its own path. */
function parentDir(path: string): FsOp[] {
  const parent = dirname(path);
  return parent === '/' ? [] : [{ op: 'dir', path: parent }];
}
