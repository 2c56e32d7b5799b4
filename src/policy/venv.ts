import { closeSync } from 'node:fs';
import { join } from 'node:path';
import { type HeldDir, openDirBeneath } from '../util/index.js';

export interface Venv {
  /** The environment's root, `<dir>/.venv`. */
  readonly path: string;
  /** Put first on PATH, as `source .venv/bin/activate` would. */
  readonly bin: string;
}

/**
 * A `.venv` in the command's directory (python -m venv, uv venv, poetry with in-project venvs all
 * make one with a `bin/`), looked for on every call so a venv made by the previous command counts.
 * Reached from the held directory one name at a time, links refused: a `.venv` (or its `bin`)
 * that code made a link to a host directory is no venv, so the answer says nothing of what exists
 * out there (the server looks as root).
 */
export function detectVenv(dir: HeldDir): Venv | undefined {
  let root: number | undefined;
  try {
    root = dir.dup();
    closeSync(openDirBeneath(root, ['.venv', 'bin'], { shown: '.venv/bin' }));
  } catch {
    return undefined; // missing, a link, or not a directory
  } finally {
    if (root !== undefined) closeSync(root);
  }
  const path = join(dir.path, '.venv');
  return { path, bin: join(path, 'bin') };
}
