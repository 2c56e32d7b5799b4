// Host directories as CODEXEC_ALLOWED_PATHS opens them to code: an ordinary user's, beneath a root
// the operator listed. A root test hands them to a uid no account needs (the server runs code as
// the directory's owner); an ordinary user's test keeps its own.
import { chownSync } from 'node:fs';
import { IS_ROOT } from './mode.js';
import { tempDir } from './server.js';

/** The owner of the directories ownedDir() makes, whom a root server's code runs as there. */
export const OWNER = IS_ROOT
  ? { uid: 4242, gid: 4242 }
  : { uid: process.getuid?.() ?? 0, gid: process.getgid?.() ?? 0 };

/** A fresh temp directory owned by OWNER. */
export function ownedDir(prefix = 'codexec-owned-'): string {
  const dir = tempDir(prefix);
  if (IS_ROOT) chownSync(dir, OWNER.uid, OWNER.gid);
  return dir;
}

/** The server setting that lists `roots` as the host directories code may work beneath. */
export function allowing(...roots: string[]): { CODEXEC_ALLOWED_PATHS: string } {
  return { CODEXEC_ALLOWED_PATHS: roots.join(',') };
}
