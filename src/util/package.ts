// Where codexec's own files are (drivers/, Dockerfile.sandbox, package.json, dist/): the package's
// root, found from this module's location by walking up to codexec's package.json. One answer from
// src/ (tests), dist/ (tsc's output: the library) and dist/bundle/ (the bin, whose modules sit at
// other depths), so no module counts `../` from where it happens to be built.
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

interface Package {
  readonly root: string;
  readonly version: string;
}

function find(from: string): Package {
  for (let dir = from; ; dir = dirname(dir)) {
    let manifest: { name?: unknown; version?: unknown } | undefined;
    try {
      manifest = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'));
    } catch {
      // none here (or not ours to read): further up
    }
    if (manifest?.name === 'codexec') return { root: dir, version: String(manifest.version) };
    if (dirname(dir) === dir) throw new Error(`codexec's package.json is not above ${from}`);
  }
}

const PACKAGE = find(dirname(fileURLToPath(import.meta.url)));

/** codexec's version, from its package.json. */
export const PACKAGE_VERSION = PACKAGE.version;

/** A path inside codexec's package, e.g. `packagePath('drivers', 'zygote.py')`. */
export const packagePath = (...parts: string[]): string => join(PACKAGE.root, ...parts);
