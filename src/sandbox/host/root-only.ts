import { lstatSync, mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { SandboxUnavailableError } from '../../errors/index.js';

/** Root's, no symbolic link, and writable by nobody else: what a root server may trust on disk. */
export function rootOnly(path: string): boolean {
  const stat = lstatSync(path, { throwIfNoEntry: false });
  return !!stat && !stat.isSymbolicLink() && stat.uid === 0 && (stat.mode & 0o022) === 0;
}

/**
 * `dir` made (0700), and it and its parent root's alone, else SandboxUnavailableError saying what
 * it holds: what lies in a directory anybody else could reach proves nothing and may be swapped.
 */
export function ensureRootDir(dir: string, holds: string): void {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  for (const path of [dirname(dir), dir]) {
    if (!rootOnly(path) || !lstatSync(path).isDirectory())
      throw new SandboxUnavailableError(
        `${path} must be a directory of root's that nobody else may write (it holds ${holds})`,
      );
  }
}
