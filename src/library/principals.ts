import { createHash } from 'node:crypto';
import { join } from 'node:path';
import { LOCAL_PRINCIPAL } from '../util/index.js';

/** Where the libraries of principals other than the local one live, beneath the scripts dir. */
export const PRINCIPALS_FOLDER = '.principals';

/**
 * A folder name for any principal name: its safe characters for whoever reads the disk, then a
 * hash of the whole name. Never a path: `..`, `/`, NUL, a name over 255 bytes all come out as one
 * plain component. The hash keeps names apart that differ only in case (case-insensitive disks)
 * or in the characters replaced, and a leading dot is impossible (it starts with a letter or `_`).
 */
export function principalFolder(principal: string): string {
  const readable = principal.replace(/[^A-Za-z0-9_-]/g, '_').slice(0, 40);
  const hash = createHash('sha256').update(principal, 'utf8').digest('hex').slice(0, 32);
  return `p_${readable}-${hash}`;
}

/**
 * The library of `principal` under `scriptsDir`: the local principal (stdio, CLI, --no-auth)
 * keeps the folder itself, as before principals existed; every other one a folder of its own in
 * `.principals/`, which no script name can reach (script names cannot start with a dot).
 */
export function libraryDir(scriptsDir: string, principal: string): string {
  if (principal === LOCAL_PRINCIPAL) return scriptsDir;
  return join(scriptsDir, PRINCIPALS_FOLDER, principalFolder(principal));
}
