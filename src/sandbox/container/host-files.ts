// The set of host paths a --from-host image holds, kept as the host has them: every directory
// above a file and every symlink on the way to it (/lib -> usr/lib, /etc/alternatives/awk …), so
// a binary sits at the same absolute path and the loader finds each library where ldd saw it.
import { lstat, readdir, readlink } from 'node:fs/promises';
import { basename, dirname, join, resolve } from 'node:path';

type Kind = 'dir' | 'file' | 'symlink';

/** Symlinks followed in a row before the path counts as a loop (the kernel's own limit). */
const MAX_LINKS = 40;
/** A linked directory is copied whole only this deep (/usr/share/javascript/jquery), never /usr/lib. */
const MIN_TREE_DEPTH = 4;

export class HostFileSet {
  private readonly kinds = new Map<string, Kind>();
  private readonly real = new Map<string, string>();
  private readonly trees = new Set<string>();

  /** Adds `path` with its directories and symlinks; returns its real path. Rejects when absent. */
  async add(path: string, links = 0): Promise<string> {
    const absolute = resolve(path);
    if (absolute === '/') return '/';
    const known = this.real.get(absolute);
    if (known) return known;
    if (links > MAX_LINKS) throw new Error(`too many symlinks at ${absolute}`);
    const parent = await this.add(dirname(absolute), links);
    const here = join(parent, basename(absolute));
    const stats = await lstat(here);
    let real = here;
    if (stats.isSymbolicLink()) {
      this.kinds.set(here, 'symlink');
      real = await this.add(resolve(parent, await readlink(here)), links + 1);
    } else if (stats.isDirectory()) {
      this.kinds.set(here, 'dir');
    } else if (stats.isFile()) {
      this.kinds.set(here, 'file');
    }
    this.real.set(absolute, real);
    return real;
  }

  /** Adds a directory and all it holds; a symlink inside brings its target, as add() does. */
  async addTree(dir: string): Promise<void> {
    const root = await this.add(dir);
    if (this.trees.has(root) || this.kinds.get(root) !== 'dir') return;
    this.trees.add(root);
    const links: string[] = [];
    for (const entry of await readdir(root, { recursive: true, withFileTypes: true })) {
      // parentPath is Node 20.12+; before it the same value was called path.
      const parent = entry.parentPath ?? (entry as unknown as { path: string }).path;
      const path = join(parent, entry.name);
      if (entry.isDirectory()) this.kinds.set(path, 'dir');
      else if (entry.isFile()) this.kinds.set(path, 'file');
      else if (entry.isSymbolicLink()) {
        this.kinds.set(path, 'symlink');
        links.push(path);
      }
    }
    for (const link of links) await this.follow(link);
  }

  /** Adds what a symlink inside a tree points to; a dangling one stays dangling, as on the host. */
  private async follow(link: string): Promise<void> {
    let target: string;
    try {
      target = await this.add(resolve(dirname(link), await readlink(link)));
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return;
      throw error;
    }
    if (this.kinds.get(target) === 'dir' && target.split('/').length - 1 >= MIN_TREE_DEPTH) {
      await this.addTree(target);
    }
  }

  /** Regular files, absolute (what ldd is asked about). */
  files(): string[] {
    return [...this.kinds].filter(([, kind]) => kind === 'file').map(([path]) => path);
  }

  /** Every path as tar takes it from `/`: relative, parents before children. */
  names(): string[] {
    return [...this.kinds.keys()].map((path) => path.slice(1)).sort();
  }
}
