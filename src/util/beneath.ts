// Paths under a workspace, reached without following a symlink and without leaving it, whatever
// code running beside the server renames or swaps meanwhile (DESIGN §9 "Edges safe for many
// principals"). Node has no openat(2): the kernel's `/proc/self/fd/<fd>/<name>` gives the same
// lookup. It starts at the very directory the fd holds (a rename of any path above it changes
// nothing) and looks up one name; O_NOFOLLOW refuses a symlink there, O_DIRECTORY anything but a
// directory. One name at a time, never "..": RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS by hand.
import {
  closeSync,
  constants,
  fchownSync,
  lstatSync,
  mkdirSync,
  openSync,
  readdirSync,
  type Stats,
} from 'node:fs';
import { type FileHandle, open, unlink } from 'node:fs/promises';
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

/**
 * Runs `act` with the directory that holds the last name of `path` beneath `root`, opened one
 * name at a time (a symlink or non-directory on the way is FORBIDDEN_PATH), and that last name.
 */
export async function inParentBeneath<T>(
  root: string,
  path: string,
  act: (dirFd: number, name: string) => Promise<T>,
  walk: Omit<DirWalk, 'shown'> = {},
): Promise<T> {
  const segments = segmentsOf(path);
  const rootFd = openRoot(root);
  let dirFd: number | undefined;
  try {
    dirFd = openDirBeneath(rootFd, segments.slice(0, -1), { ...walk, shown: path });
    return await act(dirFd, segments[segments.length - 1] as string);
  } finally {
    if (dirFd !== undefined) closeSync(dirFd);
    closeSync(rootFd);
  }
}

/** Opens the file `path` names beneath `root` (O_NOFOLLOW added: a symlink there is ELOOP). */
export function openBeneath(root: string, path: string, flags: number, mode?: number): Promise<FileHandle> {
  return inParentBeneath(root, path, (dirFd, name) =>
    open(at(dirFd, name), flags | constants.O_NOFOLLOW, mode),
  );
}

/** Removes the file `path` names beneath `root` (a link there goes, never what it points to). */
export function unlinkBeneath(root: string, path: string): Promise<void> {
  return inParentBeneath(root, path, (dirFd, name) => unlink(at(dirFd, name)));
}

/** The names in directory `rel` beneath `root` ("" for the root); none when it cannot be opened. */
export function listBeneath(root: string, rel: string): string[] {
  let rootFd: number | undefined;
  let fd: number | undefined;
  try {
    rootFd = openRoot(root);
    fd = openDirBeneath(rootFd, rel === '' ? [] : segmentsOf(rel), { shown: rel });
    return readdirSync(at(fd));
  } catch {
    return [];
  } finally {
    if (fd !== undefined) closeSync(fd);
    if (rootFd !== undefined) closeSync(rootFd);
  }
}

/** Opens the workspace root itself (a real directory, not a link to one). Close it with closeSync. */
export function openRoot(root: string): number {
  return openSync(root, DIR_FLAGS);
}

/** Opens directory `name` inside `dirFd`; a symlink or non-directory there throws (ELOOP/ENOTDIR). */
function openDirAt(dirFd: number, name: string): number {
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

function fchownQuietly(fd: number, owner: { readonly uid: number; readonly gid: number }): void {
  try {
    fchownSync(fd, owner.uid, owner.gid);
  } catch {
    // not root, or a filesystem without owners: the server's own uid keeps it, as any write would
  }
}

export interface WalkEntry {
  /** The directory the entry is in; valid until the walk goes on. */
  readonly dirFd: number;
  readonly name: string;
  /** Relative to the root, "/"-separated. */
  readonly rel: string;
  readonly stat: Stats;
  readonly depth: number;
}

export interface WalkOptions {
  /** Entries yielded at most (then the walk ends). */
  readonly maxEntries: number;
  /** Directories deeper than this are not entered (the root's children are depth 0). */
  readonly maxDepth: number;
}

/**
 * Breadth-first, names sorted, beneath `rootFd`: each directory is opened from the root one name
 * at a time (openDirBeneath), so a directory swapped for a symlink mid-walk is skipped, never
 * followed. The consumer answers each directory entry with `true` to walk into it. Synchronous
 * calls (µs each, where the thread pool costs ~0.3 ms a call); an async consumer may await
 * between entries to let the event loop breathe.
 */
export function* walkBeneath(rootFd: number, options: WalkOptions): Generator<WalkEntry, void, boolean> {
  let seen = 0;
  let level: string[] = [''];
  for (let depth = 0; level.length > 0 && depth <= options.maxDepth; depth++) {
    const next: string[] = [];
    for (const rel of level) {
      let fd: number;
      try {
        fd = openDirBeneath(rootFd, rel === '' ? [] : rel.split('/'), { shown: rel });
      } catch {
        continue; // swapped, removed or unreadable since it was listed
      }
      try {
        const names = safeReaddir(fd).sort();
        for (const name of names) {
          if (++seen > options.maxEntries) return;
          const stat = lstatSync(at(fd, name), { throwIfNoEntry: false });
          if (!stat) continue;
          const path = rel === '' ? name : `${rel}/${name}`;
          const enter = yield { dirFd: fd, name, rel: path, stat, depth };
          if (enter && stat.isDirectory()) next.push(path);
        }
      } finally {
        closeSync(fd);
      }
    }
    level = next;
  }
}

function safeReaddir(fd: number): string[] {
  try {
    return readdirSync(at(fd));
  } catch {
    return [];
  }
}
