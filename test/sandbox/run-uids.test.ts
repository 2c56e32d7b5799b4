// The uids of a root server's landlock runs: one per run, shared only by runs writing the same
// workspace, back to the block when their workspaces are given back; a block per live server.

import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, chownSync, mkdirSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { reclaimTree } from '../../src/sandbox/host/index.js';
import { claimBlock } from '../../src/sandbox/landlock/uid-blocks.js';
import { BLOCK_SIZE, isRunUid, RUN_GID, RunUids } from '../../src/sandbox/landlock/uids.js';
import { IS_ROOT } from '../helpers/mode.js';
import { tempDir } from '../helpers/server.js';

describe('RunUids', () => {
  it('gives each run a uid of its own, and runs writing one workspace the same', () => {
    const uids = new RunUids({ first: 1000, count: 4 });
    const a = uids.take(['/w/a']);
    const b = uids.take(['/w/b']);
    const sharing = uids.take(['/w/a']);
    expect(a.uid).not.toBe(b.uid);
    expect(sharing.uid).toBe(a.uid);
    expect([a.gid, b.gid]).toEqual([RUN_GID, RUN_GID]);
    // A stage that writes a session's directory and a fresh one: the session's owner.
    expect(uids.take(['/w/stage', '/w/b']).uid).toBe(b.uid);
  });

  it('takes a uid back once every run holding it returned it, and hands it out again last', () => {
    const uids = new RunUids({ first: 1000, count: 3 });
    const a = uids.take(['/w/a']);
    const held = uids.take(['/w/a']);
    a.returned();
    a.returned(); // once only
    expect(uids.inUse).toBe(1);
    held.returned();
    expect(uids.inUse).toBe(0);
    const next = [uids.take(['/w/1']).uid, uids.take(['/w/2']).uid, uids.take(['/w/3']).uid];
    expect(next).toEqual([1001, 1002, 1000]);
  });

  it('refuses a run when every uid of the block is held, naming why', () => {
    const uids = new RunUids({ first: 1000, count: 2 });
    uids.take(['/w/a']);
    const b = uids.take(['/w/b']);
    expect(() => uids.take(['/w/c'])).toThrow(
      /all 2 uids .* are in use: 2 by runs and sessions that have not ended; /,
    );
    b.returned();
    expect(uids.take(['/w/c']).uid).toBe(b.uid);
  });

  // A run that leaves a tree deeper than give-back walks keeps its uid: thousands of them used up
  // the block for the server's life, though retention had removed every such workspace.
  it('hands a uid a give-back left owning files out again once its workspaces are gone', () => {
    const base = tempDir('codexec-kept-');
    const [a, b, c] = [join(base, 'a'), join(base, 'b'), join(base, 'c')];
    for (const dir of [a, b, c]) mkdirSync(dir);
    const uids = new RunUids({ first: 1000, count: 2 });
    const first = uids.take([a]);
    const second = uids.take([b]);
    first.kept();
    second.kept();
    // A later run writing the kept tree shares its uid (it reaches the files the uid owns there).
    const again = uids.take([a]);
    expect(again.uid).toBe(first.uid);
    again.returned();
    expect(() => uids.take([c])).toThrow(
      /in use: 0 by runs and sessions that have not ended, 2 by the files of workspaces runs left too deep/,
    );
    rmSync(b, { recursive: true });
    expect(uids.take([c]).uid).toBe(second.uid);
    // `a` is still there: its uid stays out.
    expect(() => uids.take([join(base, 'd')])).toThrow(/in use: 1 by runs .*, 1 by the files of workspaces/);
  });
});

/** A shell loop until `path` exists, for at most ~30 s (a failed test leaves no holder behind). */
const waitFor = (path: string) =>
  `i=0; while [ ! -e ${path} ] && [ $i -lt 1500 ]; do sleep 0.02; i=$((i + 1)); done`;

describe.runIf(IS_ROOT)('claimBlock: a lock file per block, in a directory of root’s', () => {
  const base = tempDir('codexec-uid-locks-');
  const dir = join(base, 'locks');
  const flock = '/usr/bin/flock';
  const reclaimed: number[] = [];
  const claim = (start: number) =>
    claimBlock({
      dir,
      flock,
      start,
      trees: [],
      reclaim: async (blocks) => void reclaimed.push(...blocks.map((b) => b.first)),
    });

  it('skips a block a live server holds; a dead server’s is reclaimed and never served again', async () => {
    const first = await claim(7);
    const second = await claim(7);
    expect(second.first).toBe(first.first + BLOCK_SIZE);
    for (const block of [first, second]) {
      expect(block.count).toBe(BLOCK_SIZE);
      expect(isRunUid(block.first)).toBe(true);
      expect(isRunUid(block.first + block.count - 1)).toBe(true);
    }
    expect(reclaimed).toEqual([]);
    // Its server gone without giving every uid back (the holder's stdin closed): the lock goes
    // with it, the file stays, and the block's uids may own files anywhere.
    first.release();
    const free = () => spawnSync(flock, ['--nonblock', '-E', '75', join(dir, '7'), 'true']).status === 0;
    await expect.poll(free, { timeout: 15_000, interval: 20 }).toBe(true);
    const third = await claim(7);
    // What it left in this server's trees is given back first; then a block never served.
    expect(reclaimed).toEqual([first.first]);
    expect([first.first, second.first]).not.toContain(third.first);
    expect(readdirSync(dir).sort()).toEqual(['7.dead', '8', '9']); // never probed again
    // A server that ends with every uid given back retires its block: served again.
    third.retire();
    expect(readdirSync(dir).sort()).toEqual(['7.dead', '8']);
    const fourth = await claim(9);
    expect(fourth.first).toBe(third.first);
    fourth.release();
    second.release();
  });

  it.each([
    ['', ' serve'],
    [' (an older server’s, which names no purpose)', ''],
  ])(
    "waits for a just-killed server's lock holder%s, whose server is gone, and reclaims its block",
    async (_, purpose) => {
      const lockDir = join(base, `orphaned${purpose.trim()}`);
      const started = await claimBlock({ dir: lockDir, flock, start: 3, trees: [], reclaim: async () => {} });
      started.release(); // its file stays: an unclean end
      // Its holder lets go once it has read its pipe's end: a busy machine may take a while.
      const free = () =>
        spawnSync(flock, ['--nonblock', '-E', '75', join(lockDir, '3'), 'true']).status === 0;
      await expect.poll(free, { timeout: 15_000, interval: 20 }).toBe(true);
      // A holder left by a killed server: the server its arguments name (the shell) gone at once,
      // and it lets go only when told (as flock does once it reads the dead server's pipe's end).
      const path = join(lockDir, '3');
      const release = join(lockDir, 'release');
      spawnSync('/bin/sh', [
        '-c',
        `${flock} ${path} /bin/sh -c '${waitFor(release)}' codexec-run-uids $$${purpose} >/dev/null 2>&1 &`,
      ]);
      const held = () => spawnSync(flock, ['--nonblock', '-E', '75', path, 'true']).status;
      await expect.poll(held, { timeout: 15_000, interval: 20 }).toBe(75);
      const seen: number[] = [];
      const letGo = setTimeout(() => writeFileSync(release, ''), 300);
      const next = await claimBlock({
        dir: lockDir,
        flock,
        start: 3,
        trees: [],
        reclaim: async (blocks) => void seen.push(...blocks.map((b) => b.first)),
      }).finally(() => clearTimeout(letGo));
      expect(seen).toEqual([started.first]);
      expect(readdirSync(lockDir)).toContain('3.dead');
      next.release();
    },
  );

  it("reclaims the trees the dead server's lock file names, whichever server finds it dead", async () => {
    const lockDir = join(base, 'homes');
    const theirs = await claimBlock({
      dir: lockDir,
      flock,
      start: 5,
      trees: ['/a/workspace'],
      reclaim: async () => {},
    });
    // An older server's lock file names no trees: the finder's own are the ones it knows of.
    const older = await claimBlock({ dir: lockDir, flock, start: 6, trees: [], reclaim: async () => {} });
    writeFileSync(join(lockDir, '6'), '');
    for (const block of [theirs, older]) block.release();
    const free = (name: string) => () =>
      spawnSync(flock, ['--nonblock', '-E', '75', join(lockDir, name), 'true']).status === 0;
    await expect.poll(free('5'), { timeout: 15_000, interval: 20 }).toBe(true);
    await expect.poll(free('6'), { timeout: 15_000, interval: 20 }).toBe(true);
    const seen: Array<{ first: number; trees: readonly string[] }> = [];
    const next = await claimBlock({
      dir: lockDir,
      flock,
      start: 5,
      trees: ['/b/workspace'],
      reclaim: async (blocks) => void seen.push(...blocks.map(({ first, trees }) => ({ first, trees }))),
    });
    expect(seen).toEqual([
      { first: theirs.first, trees: ['/a/workspace'] },
      { first: older.first, trees: ['/b/workspace'] },
    ]);
    next.release();
  });

  /** A live server (this process) reclaiming block `n` of `lockDir`, which names `trees`: it buries the block once `done` exists, then lets go. */
  async function reclaiming(lockDir: string, n: number, trees: readonly string[] | undefined) {
    mkdirSync(lockDir, { mode: 0o700 });
    const path = join(lockDir, String(n));
    const done = join(lockDir, 'done');
    if (trees) writeFileSync(path, `${JSON.stringify({ trees })}\n`);
    const reclaimer = spawn(
      flock,
      [
        path,
        '/bin/sh',
        '-c',
        `${waitFor(done)}; mv ${path} ${path}.dead`,
        'codexec-run-uids',
        String(process.pid),
        'reclaim',
      ],
      { stdio: 'ignore' },
    );
    onTestFinished(() => {
      reclaimer.kill();
    });
    const held = () => spawnSync(flock, ['--nonblock', '-E', '75', path, 'true']).status;
    await expect.poll(held, { timeout: 15_000, interval: 20 }).toBe(75);
    return { letGo: () => writeFileSync(done, '') };
  }

  /** A block claimed from `lockDir`, trying block 4 first: how long it took, and what it reclaimed. */
  async function claimAt4(lockDir: string, trees: string[]) {
    const started = Date.now();
    const seen: number[] = [];
    const next = await claimBlock({
      dir: lockDir,
      flock,
      start: 4,
      trees,
      reclaim: async (blocks) => void seen.push(...blocks.map((b) => b.first)),
    });
    return { next, ms: Date.now() - started, seen };
  }

  it.each([
    ['names one of its trees', ['/a/workspace']],
    ['names none (an older server)', undefined],
  ])(
    'waits while another server reclaims a dead block that %s, and leaves it to that server',
    async (_, trees) => {
      const lockDir = join(base, `reclaiming-${trees ? 'named' : 'unnamed'}`);
      const other = await reclaiming(lockDir, 4, trees);
      const letGo = setTimeout(other.letGo, 500);
      const { next, ms, seen } = await claimAt4(lockDir, ['/a/workspace']).finally(() => clearTimeout(letGo));
      // Not before the reclaim was done; not reclaimed twice; not served.
      expect(ms).toBeGreaterThanOrEqual(450);
      expect(seen).toEqual([]);
      expect(readdirSync(lockDir).sort()).toEqual(['4.dead', '5', 'done']);
      next.release();
    },
  );

  it("does not wait for another server's reclaim of a block that names none of its trees", async () => {
    const lockDir = join(base, 'reclaiming-other-home');
    const other = await reclaiming(lockDir, 4, ['/a/workspace']);
    const { next, ms, seen } = await claimAt4(lockDir, ['/b/workspace']);
    // At once (the reclaim goes on for as long as it takes); the block left to its reclaimer.
    expect(ms).toBeLessThan(5_000);
    expect(seen).toEqual([]);
    expect(readdirSync(lockDir).sort()).toEqual(['4', '5']);
    next.release();
    other.letGo();
  });

  it('refuses a lock directory others may write', async () => {
    const open = join(base, 'open');
    mkdirSync(open, { mode: 0o777 });
    chmodSync(open, 0o777);
    await expect(
      claimBlock({ dir: join(open, 'locks'), flock, trees: [], reclaim: async () => {} }),
    ).rejects.toThrow(/must be a directory of root's that nobody else may write/);
  });
});

describe.runIf(IS_ROOT)('reclaimTree', () => {
  it('gives entries a dead run’s uid owns back to root, and leaves every other owner', async () => {
    const tree = tempDir('codexec-reclaim-');
    mkdirSync(join(tree, 'sub'));
    writeFileSync(join(tree, 'sub', 'stale.txt'), 'x');
    writeFileSync(join(tree, 'mine.txt'), 'x');
    const stale = 0x7000_0000 + 5;
    chownSync(tree, stale, 65534);
    chownSync(join(tree, 'sub'), stale, 65534);
    chownSync(join(tree, 'sub', 'stale.txt'), stale, 65534);
    chownSync(join(tree, 'mine.txt'), 4242, 4242);
    await reclaimTree(tree, (uid) => uid === stale);
    const owner = (path: string) => statSync(join(tree, path)).uid;
    expect([owner('.'), owner('sub'), owner('sub/stale.txt'), owner('mine.txt')]).toEqual([0, 0, 0, 4242]);
  });
});
