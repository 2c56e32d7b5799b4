import { statSync } from 'node:fs';
import { join } from 'node:path';

export interface Venv {
  /** The environment's root, `<dir>/.venv`. */
  readonly path: string;
  /** Put first on PATH, as `source .venv/bin/activate` would. */
  readonly bin: string;
}

/**
 * A `.venv` in the command's directory (python -m venv, uv venv, poetry with in-project venvs all
 * make one with a `bin/`), looked for on every call so a venv made by the previous command counts.
 */
export function detectVenv(dir: string): Venv | undefined {
  const path = join(dir, '.venv');
  const bin = join(path, 'bin');
  return statSync(bin, { throwIfNoEntry: false })?.isDirectory() ? { path, bin } : undefined;
}
