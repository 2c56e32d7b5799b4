import { mkdirSync, rmSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { diffSnapshots, snapshotDir } from '../../src/engine/index.js';
import { tempDir } from '../helpers/server.js';

describe('artifact snapshots', () => {
  let dir = '';
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('reports created, modified and deleted files recursively, excluding names asked', async () => {
    dir = tempDir();
    writeFileSync(join(dir, 'keep.txt'), 'same');
    writeFileSync(join(dir, 'change.txt'), 'old');
    writeFileSync(join(dir, 'gone.txt'), 'x');
    writeFileSync(join(dir, '_codexec_script.py'), 'print(1)');
    const before = await snapshotDir(dir, { exclude: new Set(['_codexec_script.py']) });
    writeFileSync(join(dir, 'change.txt'), 'newer');
    utimesSync(join(dir, 'change.txt'), new Date(), new Date(Date.now() + 5000));
    rmSync(join(dir, 'gone.txt'));
    mkdirSync(join(dir, 'out/deep'), { recursive: true });
    writeFileSync(join(dir, 'out/deep/result.csv'), 'a,b');
    symlinkSync('/etc', join(dir, 'link'));
    const after = await snapshotDir(dir, { exclude: new Set(['_codexec_script.py']) });
    expect(diffSnapshots(before, after)).toEqual({
      created: ['link', 'out/deep/result.csv'],
      modified: ['change.txt'],
      deleted: ['gone.txt'],
    });
  });

  it('stops at the entry bound, and says so (the diff too)', async () => {
    dir = tempDir();
    for (let i = 0; i < 50; i++) writeFileSync(join(dir, `f${i}`), '');
    const cut = await snapshotDir(dir, { maxEntries: 10 });
    expect(cut.size).toBe(10);
    expect(cut.walkStopped).toBe(true);
    const whole = await snapshotDir(dir);
    expect(whole.walkStopped).toBeUndefined();
    expect(diffSnapshots(new Map(), cut).walkStopped).toBe(true);
    expect(diffSnapshots(new Map(), whole).walkStopped).toBeUndefined();
  });

  it('says so when directories past the depth bound are not entered', async () => {
    dir = tempDir();
    mkdirSync(join(dir, 'a/b/c'), { recursive: true });
    writeFileSync(join(dir, 'a/b/c/deep.txt'), '');
    const cut = await snapshotDir(dir, { maxDepth: 1 });
    expect([...cut.keys()]).toEqual([]);
    expect(cut.walkStopped).toBe(true);
    expect((await snapshotDir(dir)).walkStopped).toBeUndefined();
  });
});

describe('generated files', () => {
  let dir = '';
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('are neither listed nor walked, at any depth; dist, build and logs stay listed', async () => {
    dir = tempDir();
    for (const path of [
      '__pycache__/m.pyc',
      'a/b/__pycache__/x.pyc',
      '.pytest_cache/v/cache',
      '.mypy_cache/3.11/x.json',
      '.ruff_cache/x',
      'node_modules/p/index.js',
      '.venv/bin/python',
      'pkg.egg-info/PKG-INFO',
      '.tox/py/x',
      '.DS_Store',
      'Thumbs.db',
      '.coverage',
      'a/stray.pyc',
      'a/x.pyo',
      '.f.swp',
      '.f.swo',
      'notes.txt~',
      'dist/pkg.whl',
      'build/out.o',
      'run.log',
      'a/b/keep.py',
    ]) {
      mkdirSync(join(dir, path, '..'), { recursive: true });
      writeFileSync(join(dir, path), '');
    }
    const listed = [...(await snapshotDir(dir)).keys()].sort();
    expect(listed).toEqual(['a/b/keep.py', 'build/out.o', 'dist/pkg.whl', 'run.log']);
  });
});
