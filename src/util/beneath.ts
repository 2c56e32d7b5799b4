// Paths under a workspace, reached without following a symlink and without leaving it, whatever
// code running beside the server renames or swaps meanwhile (so no caller reaches
// outside what it was given). Node has no openat(2): the kernel's `/proc/self/fd/<fd>/<name>` gives the same
// lookup. It starts at the very directory the fd holds (a rename of any path above it changes
// nothing) and looks up one name; O_NOFOLLOW refuses a symlink there, O_DIRECTORY anything but a
// directory. One name at a time, never "..": RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS by hand.

import { isUtf8 } from 'node:buffer';
import {
  closeSync,
  constants,
  fchownSync,
  fstatSync,
  lstatSync,
  mkdirSync,
  openSync,
  readdirSync,
  type Stats,
} from 'node:fs';
import { type FileHandle, open, unlink } from 'node:fs/promises';
import { ForbiddenPathError } from '../errors/index.js';
import type { Owner, Root } from './held-dir.js';
import { needsShowing, quotedPath, shownName } from './names.js';

const DIR_FLAGS = constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW;

/** A name as readdir gives it: text, or the raw bytes of a name that is not valid UTF-8. */
export type RawName = string | Buffer;

/**
 * The path that looks `name` up in the directory `dirFd` holds (one component; no follow by
 * itself); a path of bytes for a name that is bytes.
 */
export function at(dirFd: number, name?: string): string;
export function at(dirFd: number, name: RawName): string | Buffer;
export function at(dirFd: number, name?: RawName): string | Buffer {
  if (name === undefined) return `/proc/self/fd/${dirFd}`;
  if (typeof name === 'string') return `/proc/self/fd/${dirFd}/${name}`;
  return Buffer.concat([Buffer.from(`/proc/self/fd/${dirFd}/`), name]);
}

/**
 * The components of a caller's relative path: no absolute path, no "..", no NUL; "." and empty
 * parts dropped. Backslashes separate too, so no name carries one into a lookup.
 */
export function segmentsOf(path: string): string[] {
  if (path.includes('\0') || path.startsWith('/') || path.startsWith('\\'))
    throw new ForbiddenPathError(`${quotedPath(path)}: the path must be relative to the workspace`);
  const segments = path.split(/[/\\]+/).filter((segment) => segment !== '' && segment !== '.');
  if (segments.includes('..'))
    throw new ForbiddenPathError(`${quotedPath(path)}: ".." may not appear in the path`);
  if (segments.length === 0) throw new ForbiddenPathError(`${quotedPath(path)}: names no file`);
  return segments;
}

/**
 * Runs `act` with the directory that holds the last name of `path` beneath `root`, opened one
 * name at a time (a symlink or non-directory on the way is FORBIDDEN_PATH), and that last name.
 */
export async function inParentBeneath<T>(
  root: Root,
  path: string,
  act: (dirFd: number, name: string) => Promise<T>,
  walk: Omit<DirWalk, 'shown'> = {},
): Promise<T> {
  const segments = segmentsOf(path);
  const rootFd = openRoot(root);
  let dirFd: number | undefined;
  try {
    const as = walk.as ?? actingAs(root);
    dirFd = openDirBeneath(rootFd, segments.slice(0, -1), { ...walk, shown: path, ...(as && { as }) });
    return await act(dirFd, segments[segments.length - 1] as string);
  } finally {
    if (dirFd !== undefined) closeSync(dirFd);
    closeSync(rootFd);
  }
}

/**
 * Opens the file `path` names beneath `root` (O_NOFOLLOW added: a symlink there is ELOOP). In a
 * host directory, only what its owner may open: the server's root rights never go further.
 */
export function openBeneath(root: Root, path: string, flags: number, mode?: number): Promise<FileHandle> {
  const as = actingAs(root);
  return inParentBeneath(root, path, async (dirFd, name) => {
    const handle = await open(at(dirFd, name), flags | constants.O_NOFOLLOW, mode);
    if (as) {
      try {
        const access = flags & O_ACCMODE;
        const want =
          access === constants.O_RDONLY ? READ : access === constants.O_WRONLY ? WRITE : READ | WRITE;
        assertMay(await handle.stat(), as, want, path);
      } catch (error) {
        await handle.close();
        throw error;
      }
    }
    return handle;
  });
}

/** The access mode bits of open(2)'s flags (Linux; Node's constants lack the mask). */
const O_ACCMODE = 3;

/** Read, write and search (execute) bits, as the kernel checks them. */
export const READ = 4;
export const WRITE = 2;
export const SEARCH = 1;

/**
 * Whom the server acts for beneath `root`: a host directory's owner (a root server runs code
 * there as that user), so that what the server does there is what the owner may do.
 */
export function actingAs(root: Root): Owner | undefined {
  return typeof root === 'string' ? undefined : root.host?.runAs;
}

/**
 * FORBIDDEN_PATH unless `who` may do `want` to what `stat` describes, by its mode bits as the
 * kernel would judge them for that uid and gid (no ACL grants more here).
 */
export function assertMay(
  stat: { readonly mode: number; readonly uid: number; readonly gid: number },
  who: Owner,
  want: number,
  shown: string,
): void {
  const shift = stat.uid === who.uid ? 6 : stat.gid === who.gid ? 3 : 0;
  if (((stat.mode >> shift) & 7 & want) !== want)
    throw new ForbiddenPathError(
      `${quotedPath(shown)}: the directory's owner (uid ${who.uid}), whom code there runs as, may not ${want & WRITE ? 'write' : want & READ ? 'read' : 'search'} it`,
    );
}

/** Removes the file `path` names beneath `root` (a link there goes, never what it points to). */
export function unlinkBeneath(root: Root, path: string): Promise<void> {
  return inParentBeneath(root, path, (dirFd, name) => unlink(at(dirFd, name)));
}

/** The names in directory `rel` beneath `root` ("" for the root); none when it cannot be opened. */
export function listBeneath(root: Root, rel: string): string[] {
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

/**
 * Opens the root itself: a new descriptor of a held directory, or a path of codexec's own (a real
 * directory, not a link to one). Close it with closeSync.
 */
export function openRoot(root: Root): number {
  return typeof root === 'string' ? openSync(root, DIR_FLAGS) : root.dup();
}

/** Opens directory `name` inside `dirFd`; a symlink or non-directory there throws (ELOOP/ENOTDIR). */
function openDirAt(dirFd: number, name: RawName): number {
  return openSync(at(dirFd, name), DIR_FLAGS);
}

export interface DirWalk {
  /** Create missing directories (mode 0755), handing each to `owner` when given. */
  readonly create?: boolean;
  readonly owner?: { readonly uid: number; readonly gid: number } | undefined;
  /** Only what this uid and gid may search (and, creating, write): a host directory's owner. */
  readonly as?: Owner | undefined;
  /** The caller's path, for messages. */
  readonly shown: string;
}

/**
 * Opens the directory that `segments` names beneath `rootFd` (the root itself for none), one
 * component at a time. A symlink or a non-directory on the way is FORBIDDEN_PATH; a missing one is
 * ENOENT unless `create`. The caller closes the fd it gets (never `rootFd` itself: a new fd).
 */
export function openDirBeneath(rootFd: number, segments: readonly RawName[], walk: DirWalk): number {
  // The root's own magic link is followed on purpose: that is how an fd is duplicated here.
  let fd = openSync(at(rootFd), constants.O_RDONLY | constants.O_DIRECTORY);
  try {
    if (walk.as) assertMay(fstatSync(fd), walk.as, SEARCH, walk.shown);
    for (const segment of segments) {
      const next = openOrCreateDir(fd, segment, walk);
      closeSync(fd);
      fd = next;
      if (walk.as) assertMay(fstatSync(fd), walk.as, SEARCH, walk.shown);
    }
    return fd;
  } catch (error) {
    closeSync(fd);
    throw error;
  }
}

function openOrCreateDir(fd: number, segment: RawName, walk: DirWalk): number {
  try {
    return openDirAt(fd, segment);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ELOOP' || code === 'ENOTDIR')
      throw new ForbiddenPathError(
        `${quotedPath(walk.shown)}: ${shownName(segment)} is a symlink or not a directory`,
      );
    if (code !== 'ENOENT' || !walk.create) throw error;
  }
  // mkdir never follows its last component: a symlink planted meanwhile makes it fail (EEXIST).
  if (walk.as) assertMay(fstatSync(fd), walk.as, WRITE | SEARCH, walk.shown);
  mkdirAt(fd, segment);
  const created = openOrCreateDir(fd, segment, { ...walk, create: false });
  if (walk.owner) fchownQuietly(created, walk.owner);
  return created;
}

function mkdirAt(fd: number, segment: RawName): void {
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
  /** The name as shown (util/names: control characters and undecodable bytes escaped). */
  readonly name: string;
  /** The name to look it up by in `dirFd` (`at(dirFd, raw)`). */
  readonly raw: RawName;
  /** Relative to the root, "/"-separated, each name as shown (unique: the escaping is reversible). */
  readonly rel: string;
  readonly stat: Stats;
  readonly depth: number;
}

export interface WalkOptions {
  /** Entries yielded at most (then the walk ends). */
  readonly maxEntries: number;
  /** Directories deeper than this are not entered (the root's children are depth 0). */
  readonly maxDepth: number;
  /**
   * The root's own path, when nothing but the server can rename it (a workspace: code inside cannot
   * rename its own mount point, nor see its parent): its entries are then read by path, as fast as
   * a plain readdir and lstat (a lookup through /proc costs ~3x), and only deeper ones by fds.
   */
  readonly rootPath?: string;
}

/**
 * Breadth-first, names sorted, beneath `rootFd`: each directory is opened from the root one name
 * at a time (openDirBeneath), so a directory swapped for a symlink mid-walk is skipped, never
 * followed. The consumer answers each directory entry with `true` to walk into it. Synchronous
 * calls (µs each, where the thread pool costs ~0.3 ms a call); an async consumer may await
 * between entries to let the event loop breathe. Returns false when a bound stopped it (entries
 * left unseen, or directories past maxDepth not entered).
 */
export function* walkBeneath(rootFd: number, options: WalkOptions): Generator<WalkEntry, boolean, boolean> {
  let seen = 0;
  let level: WalkDir[] = [{ rel: '', path: [] }];
  let next: WalkDir[] = [];
  // Directories to walk next are opened from their parent's fd as they are found (one lookup each),
  // up to KEPT_FDS held at once; past that, one is reopened from the root when its turn comes.
  let kept = 0;
  try {
    for (let depth = 0; level.length > 0 && depth <= options.maxDepth; depth++) {
      next = [];
      for (const dir of level) {
        const top = dir.path.length === 0;
        let fd: number;
        try {
          fd = top ? rootFd : (dir.fd ?? openDirBeneath(rootFd, dir.path, { shown: dir.rel }));
        } catch {
          continue; // swapped, removed or unreadable since it was listed
        }
        if (dir.fd !== undefined) kept--;
        dir.fd = undefined;
        const byPath = top ? options.rootPath : undefined;
        try {
          for (const raw of namesIn(byPath ?? at(fd))) {
            if (++seen > options.maxEntries) return false;
            const stat = lstatSync(byPath === undefined ? at(fd, raw) : inDir(byPath, raw), {
              throwIfNoEntry: false,
            });
            if (!stat) continue;
            const name = typeof raw === 'string' && !needsShowing(raw) ? raw : shownName(raw);
            const rel = dir.rel === '' ? name : `${dir.rel}/${name}`;
            const enter = yield { dirFd: fd, name, raw, rel, stat, depth };
            if (!enter || !stat.isDirectory() || depth === options.maxDepth) {
              if (enter && stat.isDirectory()) next.push({ rel, path: [...dir.path, raw] });
              continue;
            }
            const child: WalkDir = { rel, path: [...dir.path, raw] };
            if (kept < KEPT_FDS) {
              try {
                child.fd = openDirAt(fd, raw);
                kept++;
              } catch {
                continue; // a link or no longer a directory: never entered
              }
            }
            next.push(child);
          }
        } finally {
          if (!top) closeSync(fd);
        }
      }
      level = next;
    }
    return level.length === 0;
  } finally {
    // An early end (a bound, or the consumer stopped): the fds still held are closed.
    for (const dir of [...level, ...next]) if (dir.fd !== undefined) closeSync(dir.fd);
  }
}

/** Directory fds a walk holds open at most for the level it will walk next. */
const KEPT_FDS = 256;

/** `name` in the directory at `dir` (a path of bytes for a name of bytes). */
function inDir(dir: string, name: RawName): string | Buffer {
  return typeof name === 'string' ? `${dir}/${name}` : Buffer.concat([Buffer.from(`${dir}/`), name]);
}

/** A directory still to walk: its shown path, the raw names that lead to it, and its fd if held. */
interface WalkDir {
  readonly rel: string;
  readonly path: readonly RawName[];
  fd?: number | undefined;
}

/**
 * The names in directory `dir` (a path), sorted. Names that are not UTF-8 come back from a string readdir with U+FFFD
 * in them (and name no file): only then is the directory read again as bytes.
 */
function namesIn(dir: string): RawName[] {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return [];
  }
  if (!names.some((name) => name.includes('\uFFFD'))) return names.sort();
  let raw: Buffer[];
  try {
    raw = readdirSync(dir, { encoding: 'buffer' });
  } catch {
    return [];
  }
  const keyed = raw.map((bytes) => {
    const name: RawName = isUtf8(bytes) ? bytes.toString('utf8') : bytes;
    return { name, key: typeof name === 'string' ? name : shownName(name) };
  });
  keyed.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  return keyed.map((entry) => entry.name);
}
