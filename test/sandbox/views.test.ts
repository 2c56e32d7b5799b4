// Copies of a few files of a directory, bound in its place as one mount (src/sandbox/namespace/
// views.ts): exactly the files given, readable by all and by no one writable, one copy per set,
// made again when a cleaner removed it, and none for what is not a file of the directory.
import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join, relative } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { DirViews } from '../../src/sandbox/namespace/views.js';

const made: string[] = [];
afterEach(() => {
  for (const dir of made.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function fakeDrivers(): { dir: string; base: string } {
  const dir = mkdtempSync(join(tmpdir(), 'codexec-fake-drivers-'));
  const base = mkdtempSync(join(tmpdir(), 'codexec-views-base-'));
  made.push(dir, base);
  writeFileSync(join(dir, 'warm.py'), 'warm\n');
  writeFileSync(join(dir, 'other.py'), 'not asked for\n');
  mkdirSync(join(dir, 'mpl'));
  writeFileSync(join(dir, 'mpl', 'backend.py'), 'backend\n');
  writeFileSync(join(dir, 'run.sh'), 'echo\n', { mode: 0o700 });
  chmodSync(join(dir, 'run.sh'), 0o700);
  return { dir, base };
}

/** Every path below `root` with its mode. */
function tree(root: string): string[] {
  return readdirSync(root, { recursive: true, encoding: 'utf8' })
    .map((path) => `${path} ${(statSync(join(root, path)).mode & 0o7777).toString(8)}`)
    .sort();
}

describe('DirViews', () => {
  it('copies exactly the files given, at their places, readable by all, writable by none', () => {
    const { dir, base } = fakeDrivers();
    const views = new DirViews(dir, base);
    const view = views.of([join(dir, 'warm.py'), join(dir, 'mpl', 'backend.py'), join(dir, 'run.sh')]);
    expect(view?.target).toBe(dir);
    const source = view?.source as string;
    expect(relative(base, source).startsWith('..')).toBe(false);
    expect(tree(source)).toEqual(['mpl 755', 'mpl/backend.py 444', 'run.sh 544', 'warm.py 444']);
    expect(statSync(source).mode & 0o777).toBe(0o755);
    expect(readFileSync(join(source, 'mpl', 'backend.py'), 'utf8')).toBe('backend\n');
    views.dispose();
    expect(existsSync(source)).toBe(false);
  });

  it('gives one copy per set of files, whatever their order, and makes it again when swept', () => {
    const { dir, base } = fakeDrivers();
    const views = new DirViews(dir, base);
    const files = [join(dir, 'warm.py'), join(dir, 'mpl', 'backend.py')];
    const first = views.of(files);
    expect(views.of([...files].reverse())?.source).toBe(first?.source);
    const other = views.of([join(dir, 'warm.py'), join(dir, 'run.sh')]);
    expect(other?.source).not.toBe(first?.source);
    rmSync(first?.source as string, { recursive: true });
    const again = views.of(files);
    expect(again?.source).not.toBe(first?.source);
    expect(again?.source).not.toBe(other?.source);
    expect(readFileSync(join(again?.source as string, 'warm.py'), 'utf8')).toBe('warm\n');
    views.dispose();
  });

  // Attack round 16: a cleaner sweeps the temporary dir, another user makes the root's name again
  // (world-writable) and plants a view there: it must never be bound, nor written into.
  it('never uses a root made again by its name after a sweep: a fresh one instead', () => {
    const { dir, base } = fakeDrivers();
    const views = new DirViews(dir, base);
    const files = [join(dir, 'warm.py'), join(dir, 'mpl', 'backend.py')];
    const first = views.of(files);
    const root = dirname(first?.source as string);
    rmSync(root, { recursive: true });
    mkdirSync(join(root, basename(first?.source as string)), { recursive: true });
    chmodSync(root, 0o777);
    writeFileSync(join(root, basename(first?.source as string), 'warm.py'), 'planted\n');
    const again = views.of(files);
    expect(dirname(again?.source as string)).not.toBe(root);
    expect(readFileSync(join(again?.source as string, 'warm.py'), 'utf8')).toBe('warm\n');
    expect(readdirSync(root)).toEqual([basename(first?.source as string)]); // nothing written there
    views.dispose();
    expect(existsSync(root)).toBe(true); // nor removed: not ours
  });

  it('gives none for a path outside the directory, the directory itself, a directory or a missing file', () => {
    const { dir, base } = fakeDrivers();
    const views = new DirViews(dir, base);
    const warm = join(dir, 'warm.py');
    expect(views.of([warm, '/etc/hostname'])).toBeUndefined();
    expect(views.of([warm, join(dir, '..', 'elsewhere')])).toBeUndefined();
    expect(views.of([warm, dir])).toBeUndefined();
    expect(views.of([warm, join(dir, 'mpl')])).toBeUndefined();
    expect(views.of([warm, join(dir, 'missing.py')])).toBeUndefined();
    views.dispose();
  });
});
