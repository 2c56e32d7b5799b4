// The container command line as data: `<engine> run …` for one SandboxSpec. The workspace (the
// spec's first writable path) is mounted at /workspace and every path under it is rewritten to
// match; other paths the spec names are mounted at their own paths. argv[0] becomes the image's
// interpreter of the same kind (its `codexec.<kind>` label), not the host's.
import { existsSync } from 'node:fs';
import { basename } from 'node:path';
import type { SandboxSpec } from '../types.js';

export const WORKSPACE = '/workspace';
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
  /** Extra options: `--userns keep-id` for rootless podman. */
  readonly extra?: readonly string[];
  /** The control launcher (drivers/container_control.py), when spec.control is set. */
  readonly controlLauncher?: string;
}

/** Host path → its path in the container. */
export function pathMapper(workspace: string): (path: string) => string {
  return (path) =>
    path === workspace
      ? WORKSPACE
      : path.startsWith(`${workspace}/`)
        ? WORKSPACE + path.slice(workspace.length)
        : path;
}

/** The image's interpreter for a host interpreter path, by its name (python3.11 → python). */
export function imageInterpreter(image: ImageInfo, hostBinary: string): string {
  const name = basename(hostBinary);
  const kind = /^python/.test(name)
    ? 'python'
    : name === 'node'
      ? 'node'
      : /^bash$/.test(name)
        ? 'bash'
        : undefined;
  return (kind && image.interpreters[kind]) ?? hostBinary;
}

export function buildContainerArgs(spec: SandboxSpec, run: ContainerRun): string[] {
  const [workspace = spec.cwd, ...otherWritable] = spec.writablePaths;
  const map = pathMapper(workspace);
  const [binary, ...rest] = spec.argv;
  if (binary === undefined) throw new TypeError('SandboxSpec.argv is empty');
  const args = [
    'run',
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
    '--pids-limit',
    String(spec.limits.maxProcs),
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
    'nproc=4096:4096',
    '--ulimit',
    'core=0',
    // Output is streamed to us; the engine keeps no copy of it.
    '--log-driver',
    'none',
    ...(spec.stdin === 'pipe' ? ['--interactive'] : []),
    ...(run.extra ?? []),
    '--volume',
    `${workspace}:${WORKSPACE}:rw`,
    ...otherWritable.filter(existsSync).flatMap((path) => ['--volume', `${path}:${path}:rw`]),
    ...readableMounts(spec, map).flatMap((path) => ['--volume', `${path}:${path}:ro`]),
    '--workdir',
    map(spec.cwd),
    ...Object.entries(containerEnv(spec.env, map, run.image.path)).flatMap(([key, value]) => [
      '--env',
      `${key}=${value}`,
    ]),
    run.image.name,
  ];
  const program = [imageInterpreter(run.image, binary), ...rest.map(map)];
  if (!spec.control) return [...args, ...program];
  if (!run.controlLauncher) throw new TypeError('a control channel needs the control launcher');
  const python = run.image.interpreters.python ?? 'python3';
  return [...args, python, '-I', '-S', run.controlLauncher, `${WORKSPACE}/${CONTROL_SOCKET}`, ...program];
}

/** Readable paths outside the workspace, existing, each once (a file inside a mounted dir goes). */
function readableMounts(spec: SandboxSpec, map: (path: string) => string): string[] {
  const found = spec.readablePaths.filter((path) => map(path) === path && existsSync(path));
  const unique = [...new Set(found)].sort();
  return unique.filter((path, i) => !unique.slice(0, i).some((dir) => path.startsWith(`${dir}/`)));
}

/** The spec's environment with paths mapped; PATH keeps its entries and gains the image's own. */
function containerEnv(
  env: Readonly<Record<string, string>>,
  map: (path: string) => string,
  imagePath: readonly string[],
): Record<string, string> {
  const mapped: Record<string, string> = {};
  for (const [key, value] of Object.entries(env)) {
    mapped[key] = value.startsWith('/') ? value.split(':').map(map).join(':') : value;
  }
  const path = (mapped.PATH ?? '').split(':').filter(Boolean);
  mapped.PATH = [...path, ...imagePath.filter((dir) => !path.includes(dir))].join(':');
  return mapped;
}
