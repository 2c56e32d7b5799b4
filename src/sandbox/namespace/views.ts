// The files of one directory a sandbox reads (codexec's drivers: a warm driver, what it imports,
// matplotlib's backend) as one bind: a copy of just those files, made once per set and bound at
// the directory's own path. bubblewrap pays a mount, a remount and a read of the mount table for
// every bind: three driver files were three binds, ~0.12 ms of CPU each per sandbox.
import { chmodSync, copyFileSync, mkdirSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { ownDir, removeStale } from './etc.js';

const PREFIX = 'codexec-views-';

/** A copy to bind at `target` in place of binding each of the files it holds. */
export interface View {
  readonly source: string;
  readonly target: string;
}

interface Made {
  readonly dir: string;
  readonly root: string;
}

export class DirViews {
  private root: string | undefined;
  private count = 0;
  private readonly made = new Map<string, Made>();

  /** Views of files under `dir` (made under `base`, the temporary directory by default). */
  constructor(
    readonly dir: string,
    private readonly base = tmpdir(),
  ) {}

  /**
   * One copy of `files` (paths under the directory, each a regular file) at their places below it;
   * undefined when one is not such a file, or no copy can be made: then each is bound as before.
   */
  of(files: readonly string[]): View | undefined {
    const key = [...new Set(files)].sort().join('\0');
    const known = this.made.get(key);
    // Still the copy this process made (a cleaner may sweep tmp, and anyone make its names again).
    if (known && known.root === this.root && ownDir(known.root) && ownDir(known.dir))
      return { source: known.dir, target: this.dir };
    const made = this.make(key.split('\0'));
    if (!made) return undefined;
    this.made.set(key, made);
    return { source: made.dir, target: this.dir };
  }

  /** Remove every view (at the server's exit). */
  dispose(): void {
    if (this.root && ownDir(this.root)) rmSync(this.root, { recursive: true, force: true });
    this.root = undefined;
    this.made.clear();
  }

  private make(files: readonly string[]): Made | undefined {
    const outside = (file: string) => relative(this.dir, file).startsWith('..') || file === this.dir;
    if (files.some(outside) || !files.every(isFile)) return undefined;
    let dir: string | undefined;
    try {
      // A fresh root at first, and whenever a cleaner took it: never one made again by its name.
      if (!this.root || !ownDir(this.root)) {
        removeStale(this.base, PREFIX);
        if (!this.root) process.once('exit', () => this.dispose());
        this.root = mkdtempSync(join(this.base, `${PREFIX}${process.pid}-`));
      }
      const root = this.root;
      dir = join(root, String(++this.count));
      mkdirSync(dir);
      for (const file of files) {
        const path = relative(this.dir, file);
        const copy = join(dir, path);
        openDirs(dir, dirname(path));
        copyFileSync(file, copy);
        // Readable by the sandbox's user, as the package's own files are; never writable.
        chmodSync(copy, (statSync(file).mode & 0o555) | 0o444);
      }
      return { dir, root };
    } catch (error) {
      if (dir && ownDir(dirname(dir))) rmSync(dir, { recursive: true, force: true });
      process.stderr.write(
        `codexec: could not copy ${this.dir} files for sandboxes: ${(error as Error).message}\n`,
      );
      return undefined;
    }
  }
}

/** `dir` and each directory of `path` below it made, 0755 whatever the umask. */
function openDirs(dir: string, path: string): void {
  let at = dir;
  for (const part of ['', ...(path === '.' ? [] : path.split('/'))]) {
    at = join(at, part);
    mkdirSync(at, { recursive: true });
    chmodSync(at, 0o755);
  }
}

function isFile(path: string): boolean {
  return statSync(path, { throwIfNoEntry: false })?.isFile() === true;
}
