// Where an install happens and how its result reaches the environment (installs never read what
// code can write: a file planted there would become the installer's input). The installer runs
// in a fresh, empty directory of its own outside every workspace and installs into it; the result
// is then copied into the environment by a process in the code sandbox, as the sandbox's uid, so a
// session's directory (which its code can change at any moment: links, planted files) is only
// ever written by that uid, never by root.
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { PackageLanguage } from './spec.js';

/**
 * The copy into `$2` (the environment) of what the installer left in `$1`, replacing what the new
 * install brings (same top-level names; for pip also the distribution's older `*.dist-info`; for
 * npm each package, scoped ones one level down, and `.bin` links merged). argv: sh -c SCRIPT sh OUT ENV.
 */
export const PLACE_SCRIPT: Record<PackageLanguage, string> = {
  python: `set -eu
out=$1; env=$2
mkdir -p "$env"
cd "$out"
for name in * .[!.]* ..?*; do
  [ -e "$name" ] || [ -L "$name" ] || continue
  case $name in *.dist-info) rm -rf "$env/\${name%-*}"-*.dist-info ;; esac
  rm -rf "$env/$name"
  cp -R -P "$name" "$env/$name"
done`,
  node: `set -eu
out=$1/node_modules; env=$2/node_modules
mkdir -p "$env"
[ -d "$out" ] || exit 0
cd "$out"
for name in * .[!.]* ..?*; do
  [ -e "$name" ] || [ -L "$name" ] || continue
  case $name in
    .package-lock.json) ;;
    .bin|@*)
      mkdir -p "$env/$name"
      for entry in "$name"/* "$name"/.[!.]*; do
        [ -e "$entry" ] || [ -L "$entry" ] || continue
        rm -rf "$env/$entry"
        cp -R -P "$entry" "$env/$entry"
      done ;;
    *)
      rm -rf "$env/$name"
      cp -R -P "$name" "$env/$name" ;;
  esac
done`,
};

/** The lifecycle scripts npm runs at install (binding.gyp implies `node-gyp rebuild`). */
const INSTALL_SCRIPTS = ['preinstall', 'install', 'postinstall'];

/**
 * Whether a package npm staged (with --ignore-scripts) has install scripts to run: only then is
 * `npm rebuild` started in the sandbox. The stage is npm's own output, written as the server's uid.
 */
export async function hasInstallScripts(prefix: string): Promise<boolean> {
  for (const dir of await packageDirs(join(prefix, 'node_modules'), MAX_PACKAGES)) {
    const manifest = await readFile(join(dir, 'package.json'), 'utf8').catch(() => '{}');
    const scripts = (safeParse(manifest) as { scripts?: Record<string, unknown> }).scripts ?? {};
    if (INSTALL_SCRIPTS.some((name) => typeof scripts[name] === 'string')) return true;
    if ((await readdir(dir).catch(() => [] as string[])).includes('binding.gyp')) return true;
  }
  return false;
}

/** Packages a tree holds, nested `node_modules` and scopes included (at most `max`). */
async function packageDirs(modules: string, max: number): Promise<string[]> {
  const found: string[] = [];
  const queue = [modules];
  while (queue.length > 0 && found.length < max) {
    const dir = queue.shift() as string;
    for (const name of await readdir(dir).catch(() => [] as string[])) {
      if (name.startsWith('.')) continue;
      const scoped = name.startsWith('@')
        ? (await readdir(join(dir, name)).catch(() => [] as string[])).map((inner) => join(dir, name, inner))
        : [join(dir, name)];
      for (const pkg of scoped) {
        found.push(pkg);
        queue.push(join(pkg, 'node_modules'));
      }
    }
  }
  return found;
}

const MAX_PACKAGES = 10_000;

function safeParse(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return {};
  }
}
