// The session's fast working-directory snapshot must agree with the engine's walk.
import { mkdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { snapshotDir } from '../../src/engine/index.js';
import { snapshotWorkingDir } from '../../src/sessions/snapshot.js';
import { tempDir } from '../helpers/server.js';

describe('snapshotWorkingDir', () => {
  const dirs: string[] = [];
  afterAll(() => {
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  });

  it.each([3, 400])('matches snapshotDir for a tree of %i files', async (count) => {
    const root = tempDir('codexec-snap-');
    dirs.push(root);
    mkdirSync(join(root, 'sub', 'deeper'), { recursive: true });
    for (let i = 0; i < count; i++)
      writeFileSync(join(root, i % 2 ? 'sub' : 'sub/deeper', `f${i}.txt`), 'x'.repeat(i));
    writeFileSync(join(root, 'top.csv'), 'a,b');
    symlinkSync('/etc', join(root, 'link'));
    expect(await snapshotWorkingDir(root)).toEqual(await snapshotDir(root));
  });
});
