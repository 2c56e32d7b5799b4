// The sandbox's /etc as one mount: a copy of the few host entries a sandbox may see, made once and
// remade when the host's change, instead of one bind per entry. bwrap pays a mount, a remount and
// a parse of the mount table for every bind: the 19 binds of /etc were ~2 ms of CPU per sandbox.
import {
  chmodSync,
  cpSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  realpathSync,
  rmSync,
  type Stats,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { alive } from '../host/index.js';

const PREFIX = 'codexec-etc-';

/** How often, at most, the host's entries are compared with the copy (on use, never on a timer). */
export const ETC_CHECK_MS = 1000;

/** One copy of the entries; removed once it is neither current nor used by a live sandbox. */
interface Generation {
  readonly dir: string;
  /** The root it was made in: one swept away is never written or removed again (see ownDir). */
  readonly root: string;
  readonly signature: string;
  users: number;
}

/** A file of codexec's own in every copy (the drop program: drop.ts). */
export interface EtcFile {
  readonly name: string;
  readonly content: Buffer;
  readonly mode: number;
}

export interface EtcLease {
  /** The copy to bind at /etc. */
  readonly dir: string;
  release(): void;
}

/**
 * Copies of `entries` of `source` (`/etc`), with an empty mount point for each of `bound` (entries
 * still bound from the host) and `files` of codexec's own. Only what every user may read is
 * copied: files, directories and symlinks readable by all; a symlink at the top (localtime,
 * resolv.conf) is followed, as a bind would, and those inside are kept as they are.
 */
export class EtcCopies {
  private root: string | undefined;
  private current: Generation | undefined;
  private checked = Number.NEGATIVE_INFINITY;
  private count = 0;
  private exitHook = false;

  constructor(
    private readonly source: string,
    private readonly entries: readonly string[],
    private readonly bound: readonly string[],
    private readonly options: {
      readonly base?: string;
      readonly checkMs?: number;
      readonly files?: readonly EtcFile[];
      /**
       * Directories of `entries` that hold only symbolic links (/etc/alternatives): a link is
       * never changed in place, only replaced or removed, which the directory's own times show,
       * so the check stats the directory alone, not each of its hundreds of links.
       */
      readonly linksOnly?: readonly string[];
    } = {},
  ) {}

  /** The current copy, remade first if the host's entries changed; undefined if none can be made. */
  acquire(now = Date.now()): EtcLease | undefined {
    if (now - this.checked >= (this.options.checkMs ?? ETC_CHECK_MS) || !this.intact()) {
      this.checked = now;
      this.refresh();
    }
    const generation = this.current;
    if (!generation) return undefined;
    generation.users++;
    let released = false;
    return {
      dir: generation.dir,
      release: () => {
        if (released) return;
        released = true;
        generation.users--;
        this.drop(generation);
      },
    };
  }

  /** Remove every copy (at the server's exit; sandboxes using one are gone or going). */
  dispose(): void {
    if (this.root && ownDir(this.root)) rmSync(this.root, { recursive: true, force: true });
    this.root = undefined;
    this.current = undefined;
  }

  private refresh(): void {
    const signature = this.signature();
    const current = this.current;
    // The copy lives under the temporary dir, which a cleaner may sweep: then it is made again.
    const intact = this.intact();
    if (intact && current?.signature === signature) return;
    const made = this.make(signature);
    // Could not copy: an intact old copy is better than none (it is retried at the next check).
    if (!made && intact) return;
    this.current = made;
    if (current) this.drop(current);
  }

  /**
   * Whether the current copy is still the one this process made: its root and itself directories
   * of this user that no one else may write. A cleaner that sweeps the temporary dir frees the
   * root's name for anyone to make again; a copy there is never bound.
   */
  private intact(): boolean {
    const current = this.current;
    return current !== undefined && current.root === this.root && ownDir(current.root) && ownDir(current.dir);
  }

  private drop(generation: Generation): void {
    if (generation === this.current || generation.users > 0) return;
    // In a root swept away (and perhaps made again by someone else): left alone.
    if (generation.root === this.root && ownDir(generation.root))
      rmSync(generation.dir, { recursive: true, force: true });
  }

  private make(signature: string): Generation | undefined {
    try {
      // A fresh root at first, and whenever a cleaner took it: never one made again by its name.
      if (!this.root || !ownDir(this.root)) {
        const base = this.options.base ?? tmpdir();
        removeStale(base, PREFIX);
        this.root = mkdtempSync(join(base, `${PREFIX}${process.pid}-`));
        this.hookExit();
      }
      const root = this.root;
      const dir = join(root, String(++this.count));
      mkdirSync(dir);
      chmodSync(dir, 0o755);
      for (const name of this.entries) {
        let real: string;
        try {
          real = realpathSync(join(this.source, name));
        } catch {
          continue; // gone, or a dangling link: nothing a bind could have shown either
        }
        cpSync(real, join(dir, name), { recursive: true, verbatimSymlinks: true, filter: readableByAll });
      }
      // Mount points: bwrap cannot create one in a read-only bind.
      for (const name of this.bound) {
        const stats = statSync(join(this.source, name), { throwIfNoEntry: false });
        if (stats?.isDirectory()) mkdirSync(join(dir, name), { mode: 0o755 });
        else if (stats) writeFileSync(join(dir, name), '', { mode: 0o644 });
      }
      for (const file of this.options.files ?? []) {
        writeFileSync(join(dir, file.name), file.content, { mode: file.mode, flag: 'wx' });
        chmodSync(join(dir, file.name), file.mode); // whatever the umask took
      }
      return { dir, root, signature, users: 0 };
    } catch (error) {
      process.stderr.write(
        `codexec: could not copy ${this.source} for sandboxes: ${(error as Error).message}\n`,
      );
      return undefined;
    }
  }

  private hookExit(): void {
    if (this.exitHook) return;
    this.exitHook = true;
    process.once('exit', () => this.dispose());
  }

  /**
   * What a change to the entries changes: each entry (followed) and what its directory lists,
   * one level down. Package managers replace files by rename, which a directory's times show.
   */
  private signature(): string {
    const parts: string[] = [];
    for (const name of [...this.entries, ...this.bound]) {
      const path = join(this.source, name);
      const stats = statSync(path, { throwIfNoEntry: false });
      parts.push(`${name}:${stamp(stats)}`);
      if (!stats?.isDirectory() || this.bound.includes(name) || this.options.linksOnly?.includes(name))
        continue;
      try {
        for (const child of readdirSync(path)) parts.push(`${child}:${stamp(lstatSync(join(path, child)))}`);
      } catch {
        parts.push('unreadable');
      }
    }
    return parts.join('\n');
  }
}

/**
 * What servers that died without their exit handler (SIGKILL) left in `base` under `prefix` and
 * their pid: ours (same uid), pid gone.
 */
export function removeStale(base: string, prefix: string): void {
  const uid = process.getuid?.();
  for (const name of readdirSync(base)) {
    const pid = Number(new RegExp(`^${prefix}(\\d+)-`).exec(name)?.[1]);
    if (!pid || pid === process.pid || alive(pid)) continue;
    const stats = lstatSync(join(base, name), { throwIfNoEntry: false });
    if (stats?.isDirectory() && stats.uid === uid) rmSync(join(base, name), { recursive: true, force: true });
  }
}

function stamp(stats: Stats | undefined): string {
  return stats ? `${stats.ino}.${stats.size}.${stats.mode}.${stats.mtimeMs}.${stats.ctimeMs}` : '-';
}

/**
 * Whether `path` is a directory (not a link) of this process's user that no other user may write:
 * what a copy codexec binds into sandboxes must live in.
 */
export function ownDir(path: string): boolean {
  const stats = lstatSync(path, { throwIfNoEntry: false });
  return stats?.isDirectory() === true && stats.uid === process.getuid?.() && (stats.mode & 0o022) === 0;
}

/** Never copy what the sandbox's user could not read on the host (0600 files, 0700 dirs). */
function readableByAll(path: string): boolean {
  const stats = lstatSync(path);
  if (stats.isSymbolicLink()) return true;
  if (stats.isDirectory()) return (stats.mode & 0o005) === 0o005;
  return stats.isFile() && (stats.mode & 0o004) !== 0;
}
