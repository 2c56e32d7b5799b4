import { join } from 'node:path';
import { LOCAL_PRINCIPAL, principalFolder } from '../util/index.js';

/** Where the libraries of principals other than the local one live, beneath the scripts dir. */
export const PRINCIPALS_FOLDER = '.principals';

/**
 * The library of `principal` under `scriptsDir`: the local principal (stdio, CLI, --no-auth)
 * keeps the folder itself, as before principals existed; every other one a folder of its own in
 * `.principals/`, which no script name can reach (script names cannot start with a dot).
 */
export function libraryDir(scriptsDir: string, principal: string): string {
  if (principal === LOCAL_PRINCIPAL) return scriptsDir;
  return join(scriptsDir, PRINCIPALS_FOLDER, principalFolder(principal));
}
