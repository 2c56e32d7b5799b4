// Paths under a workspace, reached without following a symlink and without leaving it, whatever
// code running beside the server renames or swaps meanwhile (DESIGN §9 "Edges safe for many
// principals"). Node has no openat(2): the kernel's `/proc/self/fd/<fd>/<name>` gives the same
// lookup. It starts at the very directory the fd holds (a rename of any path above it changes
// nothing) and looks up one name; O_NOFOLLOW refuses a symlink there, O_DIRECTORY anything but a
// directory. One name at a time, never "..": RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS by hand.
import { closeSync, constants, fchownSync, mkdirSync, openSync } from 'node:fs';
import { ForbiddenPathError } from '../errors/index.js';

const DIR_FLAGS = constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW;

/** The path that looks `name` up in the directory `dirFd` holds (one component; no follow by itself). */
export function at(dirFd: number, name?: string): string {
  return name === undefined ? `/proc/self/fd/${dirFd}` : `/proc/self/fd/${dirFd}/${name}`;
}

/**
 * The components of a caller's relative path: no absolute path, no "..", no NUL; "." and empty
 * parts dropped. Backslashes separate too, so no name carries one into a lookup.
 */
export function segmentsOf(path: string): string[] {
  if (path.includes('\0') || path.startsWith('/') || path.startsWith('\\'))
    throw new ForbiddenPathError(`${JSON.stringify(path)}: the path must be relative to the workspace`);
  const segments = path.split(/[/\\]+/).filter((segment) => segment !== '' && segment !== '.');
  if (segments.includes('..'))
    throw new ForbiddenPathError(`${JSON.stringify(path)}: ".." may not appear in the path`);
  if (segments.length === 0) throw new ForbiddenPathError(`${JSON.stringify(path)}: names no file`);
  return segments;
}

/** Opens the workspace root itself (a real directory, not a link to one). Close it with closeSync. */
export function openRoot(root: string): number {
  return openSync(root, DIR_FLAGS);
}

/** Opens directory `name` inside `dirFd`; a symlink or non-directory there throws (ELOOP/ENOTDIR). */
export function openDirAt(dirFd: number, name: string): number {
  return openSync(at(dirFd, name), DIR_FLAGS);
}

export interface DirWalk {
  /** Create missing directories (mode 0755), handing each to `owner` when given. */
  readonly create?: boolean;
  readonly owner?: { readonly uid: number; readonly gid: number } | undefined;
  /** The caller's path, for messages. */
  readonly shown: string;
}

/**
 * Opens the directory that `segments` names beneath `rootFd` (the root itself for none), one
 * component at a time. A symlink or a non-directory on the way is FORBIDDEN_PATH; a missing one is
 * ENOENT unless `create`. The caller closes the fd it gets (never `rootFd` itself: a new fd).
 */
export function openDirBeneath(rootFd: number, segments: readonly string[], walk: DirWalk): number {
  // The root's own magic link is followed on purpose: that is how an fd is duplicated here.
  let fd = openSync(at(rootFd), constants.O_RDONLY | constants.O_DIRECTORY);
  try {
    for (const segment of segments) {
      const next = openOrCreateDir(fd, segment, walk);
      closeSync(fd);
      fd = next;
    }
    return fd;
  } catch (error) {
    closeSync(fd);
    throw error;
  }
}

function openOrCreateDir(fd: number, segment: string, walk: DirWalk): number {
  try {
    return openDirAt(fd, segment);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ELOOP' || code === 'ENOTDIR')
      throw new ForbiddenPathError(
        `${JSON.stringify(walk.shown)}: ${segment} is a symlink or not a directory`,
      );
    if (code !== 'ENOENT' || !walk.create) throw error;
  }
  // mkdir never follows its last component: a symlink planted meanwhile makes it fail (EEXIST).
  mkdirAt(fd, segment);
  const created = openOrCreateDir(fd, segment, { ...walk, create: false });
  if (walk.owner) fchownQuietly(created, walk.owner);
  return created;
}

function mkdirAt(fd: number, segment: string): void {
  try {
    mkdirSync(at(fd, segment), { mode: 0o755 });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  }
}

export function fchownQuietly(fd: number, owner: { readonly uid: number; readonly gid: number }): void {
  try {
    fchownSync(fd, owner.uid, owner.gid);
  } catch {
    // not root, or a filesystem without owners: the server's own uid keeps it, as any write would
  }
}
