// What the sandbox sees of the host: the system directories interpreters need, read-only, and a
// few files from /etc. Read once per process; nothing here is per run.
import { lstatSync, readdirSync, readlinkSync } from 'node:fs';
import { join, posix } from 'node:path';
import type { SandboxSpec } from '../types.js';

/** A mount the sandbox gets regardless of the run: `['--ro-bind', src, dest]` or a symlink. */
export type SystemMount =
  // `source` when the host path is not `path` itself (the copy of /etc).
  | { readonly kind: 'ro-bind'; readonly path: string; readonly source?: string }
  | { readonly kind: 'dir'; readonly path: string }
  | { readonly kind: 'symlink'; readonly target: string; readonly path: string };

const ROOT_DIRS = ['usr', 'bin', 'sbin', 'lib', 'lib32', 'lib64', 'libx32'];

// Dynamic linker config, time zone, name resolution (used only with network=host), and the TLS
// roots and alternatives (BOUND_ETC).
// Deliberately absent: passwd, shadow, group, hostname, machine-id, ssh, sudoers, and the rest.
const ETC_ENTRIES = [
  'ld.so.cache',
  'ld.so.conf',
  'ld.so.conf.d',
  'localtime',
  'ca-certificates',
  'ca-certificates.conf',
  'resolv.conf',
  'hosts',
  'nsswitch.conf',
  'gai.conf',
  'host.conf',
  'protocols',
  'services',
  'mime.types',
  // Debian's python3-matplotlib keeps its defaults there: without it `import matplotlib` fails.
  'matplotlibrc',
  // fontconfig's setup (matplotlib lists the fonts with fc-list; without it, an error on stderr).
  'fonts',
  // git reads it at every start: unreadable (landlock mode: present but not allowed), git stops.
  'gitconfig',
  // ensurepip (python -m venv) reads it on Debian: unreadable, the venv gets no pip.
  'debian_version',
];

/**
 * Entries of /etc a sandbox sees besides ETC_ENTRIES: directories of hundreds of entries and
 * private keys, bound from the host where /etc is not a copy (landlock mode reads them in place).
 */
export const BOUND_ETC = ['alternatives', 'ssl', 'pki'];

/**
 * Of BOUND_ETC, those the copy of /etc (namespace/etc.ts) holds too, saving a bind each per
 * sandbox: the alternatives' links (checked by the directory's own times: only links) and the TLS
 * roots (private keys are never copied: a 0700 directory or a 0600 file is left out). /etc/pki
 * stays bound: Red Hat's holds megabytes of extracted trust bundles.
 */
export const COPIED_ETC = ['alternatives', 'ssl'];

function kindOf(path: string): 'dir' | 'file' | 'symlink' | undefined {
  try {
    const stat = lstatSync(path);
    if (stat.isSymbolicLink()) return 'symlink';
    if (stat.isDirectory()) return 'dir';
    return stat.isFile() ? 'file' : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The system mounts for a host whose root is `root` (tests pass a fake tree): with `etcCopy`, /etc
 * is that copy of etcEntries() and COPIED_ETC (namespace/etc.ts) and the other BOUND_ETC entries;
 * without, a bind per entry.
 */
export function systemMounts(root = '/', etcCopy?: string): SystemMount[] {
  const mounts: SystemMount[] = [];
  for (const name of ROOT_DIRS) {
    const host = join(root, name);
    const kind = kindOf(host);
    // Merged-/usr hosts have /bin -> usr/bin: recreate the link instead of binding twice.
    if (kind === 'symlink') mounts.push({ kind: 'symlink', target: readlinkSync(host), path: `/${name}` });
    else if (kind === 'dir') mounts.push({ kind: 'ro-bind', path: `/${name}` });
  }
  const etc = join(root, 'etc');
  const present = (name: string) => kindOf(join(etc, name)) !== undefined;
  if (etcCopy !== undefined) {
    mounts.push({ kind: 'ro-bind', path: '/etc', source: etcCopy });
    for (const name of BOUND_ETC.filter((name) => !COPIED_ETC.includes(name) && present(name)))
      mounts.push({ kind: 'ro-bind', path: `/etc/${name}` });
    return mounts;
  }
  const etcNames = [...etcEntries(root), ...BOUND_ETC.filter(present)];
  // An explicit 0755 /etc: bwrap would otherwise create it with the mode of a bound entry's source.
  if (etcNames.length > 0) mounts.push({ kind: 'dir', path: '/etc' });
  for (const name of etcNames) mounts.push({ kind: 'ro-bind', path: `/etc/${name}` });
  return mounts;
}

/** The entries of the host's /etc a sandbox sees, but for BOUND_ETC. */
export function etcEntries(root = '/'): string[] {
  const etc = join(root, 'etc');
  let pythonEtc: string[] = [];
  try {
    // Debian's python3 reads /etc/python3.X/sitecustomize.py through a symlink in /usr.
    pythonEtc = readdirSync(etc).filter((name) => /^python3(\.\d+)?$/.test(name));
  } catch {
    // no /etc at all (a fake root in tests)
  }
  return [...ETC_ENTRIES, ...pythonEtc].filter((name) => kindOf(join(etc, name)) !== undefined);
}

let cached: SystemMount[] | undefined;

export function hostSystemMounts(): SystemMount[] {
  cached ??= systemMounts();
  return cached;
}

/** Find an executable on PATH without running anything. */
export function findOnPath(name: string, path = process.env.PATH ?? '/usr/bin:/bin'): string | undefined {
  for (const dir of [...path.split(':'), '/usr/bin', '/bin', '/usr/sbin', '/sbin']) {
    if (!dir) continue;
    const candidate = join(dir, name);
    if (kindOf(candidate) === 'file' || kindOf(candidate) === 'symlink') return candidate;
  }
  return undefined;
}

/**
 * What a confiner opens for `path`: the host directory through the server's descriptor where the
 * spec has it (/proc/<server pid>/fd/<n>: the very directory, whatever is at its name now).
 */
export function bindSource(spec: Pick<SandboxSpec, 'hostDir' | 'hostDirFd'>, path: string): string {
  return path === spec.hostDir && spec.hostDirFd !== undefined
    ? `/proc/${process.pid}/fd/${spec.hostDirFd}`
    : path;
}

/**
 * What to bind for an interpreter outside the system dirs: its install prefix (`/opt/py/bin/python3`
 * → `/opt/py`), or only the binary when the prefix would be `/` or would contain a private dir
 * (`~/bin/python` must not expose the whole home).
 */
export function interpreterMount(binary: string, privateDirs: readonly string[] = []): string {
  const dir = posix.dirname(binary);
  const prefix = posix.basename(dir) === 'bin' ? posix.dirname(dir) : dir;
  const exposes = (secret: string) => secret === prefix || secret.startsWith(`${prefix}/`) || prefix === '/';
  return privateDirs.some(exposes) || prefix === '/' ? binary : prefix;
}
