// Files of the server's state that only its own user may read. A root landlock server lends its
// runs' group search on its home (so they reach their workspaces beneath), and a host process of
// that group must find nothing readable there: every run's code and output is in the search index.
import { closeSync, constants, fchmodSync, openSync } from 'node:fs';

const OWNER_ONLY = 0o600;

/**
 * Make the SQLite database at `path` (created empty if absent) and its -wal and -shm files, where
 * they exist, readable by their owner alone; SQLite gives the -wal and -shm files it makes later
 * the database's mode. A file of an earlier server, made 0644, is tightened.
 */
export function privateDatabase(path: string): void {
  restrict(path, true);
  for (const suffix of ['-wal', '-shm']) restrict(`${path}${suffix}`, false);
}

function restrict(path: string, create: boolean): void {
  let fd: number;
  try {
    const flags = constants.O_RDWR | constants.O_NOFOLLOW | (create ? constants.O_CREAT : 0);
    fd = openSync(path, flags, OWNER_ONLY);
  } catch (error) {
    if (!create && (error as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw error;
  }
  try {
    fchmodSync(fd, OWNER_ONLY); // the mode given to open is filtered by the umask, and an old file keeps its own
  } finally {
    closeSync(fd);
  }
}
