// A directory held by descriptor for the life of a run or session. It is opened once, one name at
// a time without following a symlink, and reached afterwards only through that descriptor: a
// rename of its path, or a symlink put in its place, changes nothing for what the server reads,
// writes, walks or gives back there.

import { closeSync, constants, fstatSync, openSync } from 'node:fs';
import { ForbiddenPathError } from '../errors/index.js';

/** Who owns a directory; with a root server, whom code working in a host directory runs as. */
export interface Owner {
  readonly uid: number;
  readonly gid: number;
}

export class HeldDir {
  private open = true;

  private constructor(
    /**
     * Its real path when it was opened: for messages, results and where the sandbox mounts it
     * (what is mounted there is the descriptor's directory, never this path looked up again).
     */
    readonly path: string,
    private readonly fd: number,
    readonly dev: number,
    readonly ino: number,
    /**
     * A host directory (beneath CODEXEC_ALLOWED_PATHS), not one codexec made: never lent to the
     * sandbox user; a root server runs code there as `runAs`.
     */
    readonly host: { readonly runAs?: Owner } | undefined,
    private readonly onClose: (() => void) | undefined,
    /**
     * A directory of codexec's own this one lies beneath, reached from it name by name (a work_dir
     * inside execute_command's workspace). A sandbox binds that one and starts in this one by its
     * path inside the sandbox: were a name on the way swapped for a symlink after the check, it
     * would lead within the sandbox, never to the host (a bind of this path would follow it there).
     */
    readonly within: string | undefined,
  ) {}

  /** Takes ownership of `fd` (a directory opened without following links) as the directory at `path`. */
  static adopt(
    path: string,
    fd: number,
    options: {
      readonly host?: { readonly runAs?: Owner };
      readonly onClose?: () => void;
      readonly within?: string;
    } = {},
  ): HeldDir {
    const stat = fstatSync(fd);
    return new HeldDir(path, fd, stat.dev, stat.ino, options.host, options.onClose, options.within);
  }

  /** Opens a directory codexec made (a workspace), by a path no caller chose. */
  static ofOwn(path: string): HeldDir {
    return HeldDir.adopt(path, openSync(path, DIR_FLAGS));
  }

  /**
   * A new descriptor of the same directory, for one operation (the caller closes it). Checked by
   * device and inode, so a number reused after close() can never stand for another directory.
   */
  dup(): number {
    if (!this.open) throw new ForbiddenPathError(`${this.path}: its run or session has ended`);
    const fd = openSync(`/proc/self/fd/${this.fd}`, constants.O_RDONLY | constants.O_DIRECTORY);
    const stat = fstatSync(fd);
    if (stat.dev !== this.dev || stat.ino !== this.ino) {
      closeSync(fd);
      throw new ForbiddenPathError(`${this.path}: its run or session has ended`);
    }
    return fd;
  }

  /** Whether `path` names this very directory now, reached without following a symlink. */
  isAt(path: string): boolean {
    let fd: number | undefined;
    try {
      fd = openNoFollow(path);
      const stat = fstatSync(fd);
      return stat.dev === this.dev && stat.ino === this.ino;
    } catch {
      return false;
    } finally {
      if (fd !== undefined) closeSync(fd);
    }
  }

  /** The descriptor itself, for a sandbox to bind or open (never closed by anyone but close()). */
  get descriptor(): number {
    if (!this.open) throw new ForbiddenPathError(`${this.path}: its run or session has ended`);
    return this.fd;
  }

  close(): void {
    if (!this.open) return;
    this.open = false;
    closeSync(this.fd);
    this.onClose?.();
  }
}

/** Where the server works beneath: a held directory, or a path of codexec's own. */
export type Root = string | HeldDir;

/** The path of a root, for messages and walks by path. */
export function pathOf(root: Root): string {
  return typeof root === 'string' ? root : root.path;
}

const DIR_FLAGS = constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW;

/** Opens absolute `path` from `/`, one name at a time, refusing a symlink anywhere on the way. */
function openNoFollow(path: string): number {
  let fd = openSync('/', DIR_FLAGS);
  try {
    for (const name of path.split('/').filter((part) => part !== '' && part !== '.')) {
      if (name === '..') throw new ForbiddenPathError(`${path}: ".." may not appear in the path`);
      const next = openSync(`/proc/self/fd/${fd}/${name}`, DIR_FLAGS);
      closeSync(fd);
      fd = next;
    }
    return fd;
  } catch (error) {
    closeSync(fd);
    throw error;
  }
}
