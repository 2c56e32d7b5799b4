// A lane's Unix socket in a sandbox's workspace, which code in the sandbox may change while the
// server works there. The directory is held by an fd from the start and every step goes through
// it (`/proc/self/fd/N/name`), so a rename or a symlink above changes nothing; the mode is set on
// the very inode bound (an O_PATH fd of it, never following a link swapped in at that name). The
// path given to bind is also short whatever the workspace's (sun_path holds 108 bytes).
import { chmodSync, closeSync, constants, fstatSync, openSync, unlinkSync } from 'node:fs';
import { basename, dirname } from 'node:path';
import { ForbiddenPathError } from '../errors/index.js';
import { at, quietly } from '../util/index.js';

/** Linux's O_PATH (node's fs.constants does not name it). */
const O_PATH = 0o10000000;

export interface SocketPlace {
  /** The path to listen on: `name` in the held directory. */
  readonly listenPath: string;
  /** After listening: lets any uid connect (the sandbox's 65534), once the socket is checked ours. */
  open(): void;
  /** After the server closed: removes the socket if bound (a link there goes, not what it points to). */
  release(): void;
}

export function placeSocket(path: string): SocketPlace {
  const dirFd = openSync(dirname(path), constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW);
  const listenPath = at(dirFd, basename(path));
  let bound = false;
  let released = false;
  return {
    listenPath,
    open() {
      bound = true;
      const fd = openSync(listenPath, O_PATH | constants.O_NOFOLLOW);
      try {
        const stat = fstatSync(fd);
        if (!stat.isSocket() || stat.uid !== process.geteuid?.())
          throw new ForbiddenPathError(`${path}: replaced while the egress proxy opened its socket there`);
        chmodSync(at(fd), 0o666);
      } finally {
        closeSync(fd);
      }
    },
    release() {
      if (released) return;
      released = true;
      // Only what this lane bound: a failed listen leaves the file that was there.
      if (bound) quietly(() => unlinkSync(listenPath));
      closeSync(dirFd);
    },
  };
}
