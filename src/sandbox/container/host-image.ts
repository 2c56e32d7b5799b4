// What a --from-host image holds: the interpreters codexec resolves, at their host paths, with
// python's sys.path, node's npm, bash and a set of everyday tools, the libraries all of them load,
// and the /etc files they read. Not the whole /usr (gigabytes): only what these need.
import { execFile } from 'node:child_process';
import { access, readFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import type { Interpreters } from '../../runtimes/index.js';
import { isWithin } from '../../util/index.js';
import { findOnPath } from '../host/index.js';
import { HostFileSet } from './host-files.js';
import { imageEtc, ownNames } from './image-etc.js';
import { sharedLibraries } from './ldd.js';
import type { TarEntry } from './tar.js';

const run = promisify(execFile);

/** Tools bash code expects; jq and curl only where the host has them. */
const TOOLS = [
  ...['ls', 'cat', 'echo', 'env', 'mkdir', 'rm', 'cp', 'mv', 'chmod', 'touch', 'sleep', 'date', 'id'],
  ...['whoami', 'uname', 'tr', 'cut', 'tee', 'printf', 'dirname', 'basename', 'readlink', 'realpath'],
  ...['seq', 'true', 'false', 'test', '[', 'head', 'tail', 'wc', 'sort', 'uniq', 'grep', 'sed', 'awk'],
  ...['find', 'xargs', 'jq', 'curl'],
];
/** Where tools are taken from: the system's, never a user's PATH entries. */
const TOOL_PATH = '/usr/bin:/bin:/usr/local/bin';
/** /etc and data the interpreters and tools read (absent ones are skipped). */
const HOST_EXTRAS = [
  // Never all of /etc/ssl: private/ holds the host's keys.
  '/etc/ssl/certs',
  '/etc/ssl/openssl.cnf',
  '/usr/lib/ssl/openssl.cnf',
  '/usr/share/ca-certificates',
  '/etc/localtime',
  '/etc/fonts',
  '/etc/ld.so.cache',
  '/etc/ld.so.conf',
  '/etc/ld.so.conf.d',
];
/** Python's search path and the data its libraries read (matplotlib's, the CA store); -I: no user site. */
const PYTHON_PROBE = `
import json, ssl, sys
data = []
try:
    import matplotlib
    data += [matplotlib.get_data_path(), matplotlib.matplotlib_fname()]
except Exception:
    pass
paths = ssl.get_default_verify_paths()
data += [paths.cafile, paths.capath, paths.openssl_cafile, paths.openssl_capath]
print(json.dumps({"path": [p for p in sys.path if p], "data": [p for p in data if p]}))
`;

export interface HostImagePlan {
  readonly python: string;
  readonly node: string;
  readonly bash: string;
  /** Records codexec writes, before the host's files in the archive. */
  readonly own: readonly TarEntry[];
  /** Host paths relative to `/`, parents first (tar --no-recursion takes them as they are). */
  readonly names: readonly string[];
  readonly path: string;
}

export async function planHostImage(interpreters: Interpreters): Promise<HostImagePlan> {
  const [python, node, bash] = await Promise.all([
    interpreters.get('python'),
    interpreters.get('node'),
    interpreters.get('bash'),
  ]);
  const set = new HostFileSet();
  // /bin/sh by that name: #!/bin/sh scripts and system(3) need it whatever PATH finds first.
  const binaries = await Promise.all([python, node, bash, '/bin/sh'].map((binary) => set.add(binary)));
  await addSiblings(set, python, ['python3', 'python', 'pip3', 'pip']);
  await addSiblings(set, node, ['npm', 'npx']);
  await addNpm(set, node);
  const probe = await probePython(python);
  for (const dir of probe.path) await addIfPresent(set, dir);
  // matplotlibrc may be a user's (~/.config/matplotlib): a home never goes into an image.
  const homes = [homedir(), '/root', '/home'];
  for (const path of probe.data)
    if (!homes.some((home) => isWithin(path, home))) await addIfPresent(set, path);
  for (const tool of TOOLS) {
    const found = findOnPath(tool, TOOL_PATH);
    if (found) binaries.push(await set.add(found));
  }
  for (const extra of [...HOST_EXTRAS, ...(await fontDirs())]) await addIfPresent(set, extra);
  const elf = set.files().filter((file) => /\.so(\.[\d.]+)?$/.test(file));
  for (const library of await sharedLibraries([...binaries, ...elf])) await set.add(library);
  const own = imageEtc(bash);
  const skip = ownNames(own);
  const path = [...new Set([node, python, bash].map((binary) => dirname(binary)))];
  for (const dir of ['/usr/local/sbin', '/usr/local/bin', '/usr/sbin', '/usr/bin', '/sbin', '/bin']) {
    if (!path.includes(dir)) path.push(dir);
  }
  return {
    python,
    node,
    bash,
    own,
    names: set.names().filter((name) => !skip.has(name)),
    path: path.join(':'),
  };
}

async function addIfPresent(set: HostFileSet, path: string): Promise<void> {
  if (!(await exists(path))) return;
  await set.addTree(path);
}

async function addSiblings(set: HostFileSet, binary: string, names: readonly string[]): Promise<void> {
  for (const name of names) {
    const sibling = join(dirname(binary), name);
    if (await exists(sibling)) await set.add(sibling);
  }
}

/** npm's package directory: npm beside node is a link into it (lib/node_modules/npm/bin/npm-cli.js). */
async function addNpm(set: HostFileSet, node: string): Promise<void> {
  const npm = join(dirname(node), 'npm');
  if (!(await exists(npm))) return;
  let dir = dirname(await set.add(npm));
  while (dir !== '/') {
    const manifest = await readFile(join(dir, 'package.json'), 'utf8').catch(() => undefined);
    if (manifest && (JSON.parse(manifest) as { name?: string }).name === 'npm') return set.addTree(dir);
    dir = dirname(dir);
  }
}

async function probePython(python: string): Promise<{ path: string[]; data: string[] }> {
  // cwd /: matplotlib would otherwise take a ./matplotlibrc from wherever codexec was started.
  const { stdout } = await run(python, ['-I', '-c', PYTHON_PROBE], { timeout: 30_000, cwd: '/' });
  return JSON.parse(stdout) as { path: string[]; data: string[] };
}

/** The absolute font directories fontconfig's main file names (matplotlib finds fonts there too). */
async function fontDirs(): Promise<string[]> {
  const conf = await readFile('/etc/fonts/fonts.conf', 'utf8').catch(() => '');
  return [...conf.matchAll(/<dir>(\/[^<]+)<\/dir>/g)].map((match) => match[1] ?? '').filter(Boolean);
}

async function exists(path: string): Promise<boolean> {
  return access(path).then(
    () => true,
    () => false,
  );
}
