// Which block of the runs' uid range (uids.ts) is this server's. Each block has a lock file in a
// directory only root may enter, which no sandbox can reach (an abstract socket's name, which any
// landlock run may bind, could be squatted: every block held, or a dead server's left free). A
// server holds its block's lock for its life through flock(1), whose holder ends, the lock with it,
// when the server's end of its pipe closes, however the server ends. A server that ends with every
// uid given back removes its lock file: a block is served again only then. A lock file found
// unlocked is a dead (or unclean) server's block, whose uids may still own files anywhere (kept
// workspaces, another home): it is never served again. What they own in the dead server's shared
// trees (its command workspace, package environments: a server killed mid-run never gave them
// back), which its lock file names, is given back to root, so those trees serve new runs: whichever
// server finds the block dead, one of another home too.
import { type ChildProcess, spawn } from 'node:child_process';
import { readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { isAbsolute, join } from 'node:path';
import type { Writable } from 'node:stream';
import { SandboxUnavailableError } from '../../errors/index.js';
import { quietly } from '../../util/index.js';
import { ensureRootDir } from '../host/index.js';
import { BLOCK_SIZE, BLOCKS, RANGE, type UidBlock } from './uids.js';

/** Where the blocks' lock files are: root's alone, out of every sandbox's reach. */
export const LOCK_DIR = '/run/codexec/run-uids';
const HELD = 'held\n';
const TAKEN = 75;

export interface ClaimOptions {
  /** flock(1), from util-linux. */
  readonly flock: string;
  /** This server's shared trees, which its runs' uids may own: named in its block's lock file. */
  readonly trees: readonly string[];
  /** Give back to root what uids of each of `blocks` own in its `trees` (dead servers' blocks). */
  readonly reclaim: (blocks: readonly DeadBlock[]) => Promise<void>;
  readonly dir?: string;
  /** Where the search for a never-used block starts (default: at random). */
  readonly start?: number;
}

/** A dead server's block, with the shared trees its lock file named (else this server's own). */
export interface DeadBlock extends Pick<UidBlock, 'first' | 'count'> {
  readonly trees: readonly string[];
}

/**
 * This server's block: one no lock file names. Every `<n>` no live server holds is a dead one's:
 * each is locked while what its runs left in the dead server's shared trees is reclaimed, then renamed
 * `<n>.dead` (still locked: nobody takes it meanwhile), so that none of its uids ever serves again
 * and later servers no longer probe it.
 */
export async function claimBlock(options: ClaimOptions): Promise<UidBlock> {
  const dir = options.dir ?? LOCK_DIR;
  ensureRootDir(dir, "the landlock run uids' locks");
  const names = readdirSync(dir);
  const known = new Set(
    names.filter((name) => /^\d+(\.dead)?$/.test(name)).map((name) => Number.parseInt(name, 10)),
  );
  const dead: Array<UidBlock & DeadBlock> = [];
  for (const name of names.filter((entry) => /^\d+$/.test(entry))) {
    const path = join(dir, name);
    const holder = await holdOrphaned(options.flock, path, options.trees);
    // else a live server's
    if (holder) dead.push({ ...blockOf(Number(name), holder, path), trees: treesIn(path) ?? options.trees });
  }
  try {
    if (dead.length > 0) await options.reclaim(dead);
  } finally {
    for (const block of dead) block.bury();
  }
  const start = options.start ?? Math.floor(Math.random() * BLOCKS);
  for (let tried = 0; tried < BLOCKS; tried++) {
    const index = (start + tried) % BLOCKS;
    if (known.has(index)) continue;
    const path = join(dir, String(index));
    const holder = await hold(options.flock, path, 'serve');
    if (!holder) continue;
    const block = blockOf(index, holder, path);
    try {
      writeFileSync(path, `${JSON.stringify({ trees: options.trees })}\n`);
    } catch (error) {
      block.retire();
      throw error;
    }
    return block;
  }
  throw new SandboxUnavailableError('every block of landlock run uids is held by another codexec server');
}

function blockOf(index: number, holder: ChildProcess, path: string): UidBlock {
  const release = () => {
    holder.stdin?.end();
    holder.kill();
  };
  // Both while still locked: nobody takes the block meanwhile.
  const after = (change: () => void) => () => {
    quietly(change);
    release();
  };
  return {
    first: RANGE.first + index * BLOCK_SIZE,
    count: BLOCK_SIZE,
    release,
    retire: after(() => rmSync(path, { force: true })),
    bury: after(() => renameSync(path, `${path}.dead`)),
  };
}

function inodeOf(path: string): number | undefined {
  try {
    return statSync(path).ino;
  } catch {
    return undefined;
  }
}

/** The shared trees a block's lock file names; none if it names none (an older server's). */
function treesIn(path: string): string[] | undefined {
  try {
    const { trees } = JSON.parse(readFileSync(path, 'utf8')) as { trees?: unknown };
    if (Array.isArray(trees) && trees.every((tree) => typeof tree === 'string' && isAbsolute(tree)))
      return trees;
  } catch {}
  return undefined;
}

/**
 * The lock on `path`, held; or none while a live server holds it. A server that was just killed
 * leaves its flock holder behind for a moment (it ends once it reads the end of the dead server's
 * pipe): a holder whose server is gone is waited for, up to ORPHAN_WAIT_MS, so that a server
 * started right after a crash still gives back what the dead one's runs own. So is another server
 * reclaiming the block (up to RECLAIM_WAIT_MS) when the block names one of this server's shared
 * trees (`trees`; a block that names none may hold any): a run started before it is done could
 * find its workspace still a dead uid's. A server of another home has nothing to wait for there —
 * a reclaim of millions of files would hold up every server on the host. A lock let go between
 * the try and the look at its holder is tried again.
 */
async function holdOrphaned(
  flock: string,
  path: string,
  trees: readonly string[],
): Promise<ChildProcess | undefined> {
  const started = Date.now();
  const file = inodeOf(path);
  for (;;) {
    // Buried or retired meanwhile by another server: not this one's (flock(1) would make it anew).
    if (file === undefined || inodeOf(path) !== file) return undefined;
    const holder = await hold(flock, path, 'reclaim');
    if (holder && inodeOf(path) !== file) {
      // Made anew, by that flock: no server's lock file.
      rmSync(path, { force: true });
      holder.stdin?.end();
      holder.kill();
      return undefined;
    }
    if (holder) return holder;
    const held = holderOf(path);
    if (held === 'live') return undefined;
    if (held === 'reclaiming' && !shares(path, trees)) return undefined;
    const waited = Date.now() - started;
    if (waited >= (held === 'reclaiming' ? RECLAIM_WAIT_MS : ORPHAN_WAIT_MS)) return undefined;
    if (held !== 'none') await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

/** Whether the block at `path` names one of `trees` (or names none: an older server's, any tree). */
function shares(path: string, trees: readonly string[]): boolean {
  const theirs = treesIn(path);
  return theirs === undefined || theirs.some((tree) => trees.includes(tree));
}

const ORPHAN_WAIT_MS = 5_000;
const RECLAIM_WAIT_MS = 60_000;
/**
 * The holder's last arguments name its server and what it holds the lock for:
 * `flock … /bin/sh -c SCRIPT MARK <server pid> serve|reclaim`.
 */
const MARK = 'codexec-run-uids';
type Purpose = 'serve' | 'reclaim';

/**
 * Who holds the flock on `path` (/proc/locks): nobody; a holder whose server is gone (its parent is
 * no longer the server its arguments name: init or a subreaper took it); a live server reclaiming
 * the block; or a live server's (anything else, a holder that is not codexec's too).
 */
function holderOf(path: string): 'none' | 'orphaned' | 'reclaiming' | 'live' {
  const inode = inodeOf(path);
  if (inode === undefined) return 'live'; // renamed or removed by another server meanwhile: not this one's to take
  try {
    const line = readFileSync('/proc/locks', 'utf8')
      .split('\n')
      .find(
        (entry) => / FLOCK /.test(entry) && !entry.includes('->') && new RegExp(`:${inode} `).test(entry),
      );
    const pid = line?.trim().split(/\s+/)[4];
    if (!pid) return 'none';
    const args = readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0$/, '').split('\0');
    // (An older server's holder names no purpose: it holds its block to serve.)
    const [mark, server, purpose] = args.at(-2) === MARK ? [MARK, args.at(-1), 'serve'] : args.slice(-3);
    if (mark !== MARK) return 'live';
    // /proc/<pid>/stat: "pid (comm) state ppid …"; comm may hold spaces, so read after its ')'.
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const parent = stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1];
    if (parent !== server) return 'orphaned';
    return purpose === 'reclaim' ? 'reclaiming' : 'live';
  } catch {
    return 'none'; // the holder ended while we looked
  }
}

/** A process holding the lock on `path` while this server's end of its stdin is open; none if taken. */
function hold(flock: string, path: string, purpose: Purpose): Promise<ChildProcess | undefined> {
  return new Promise((resolve, reject) => {
    const holder = spawn(
      flock,
      [
        '--nonblock',
        '--conflict-exit-code',
        String(TAKEN),
        path,
        '/bin/sh',
        '-c',
        'echo held; exec cat',
        MARK,
        String(process.pid),
        purpose,
      ],
      { stdio: ['pipe', 'pipe', 'ignore'] },
    );
    let said = '';
    holder.stdout?.on('data', (chunk: Buffer) => {
      said += chunk.toString();
      if (!said.startsWith(HELD)) return;
      holder.stdout?.destroy();
      // Neither keeps the server's event loop alive: the lock lasts as long as the server does.
      holder.unref();
      (holder.stdin as Writable & { unref?: () => void }).unref?.();
      resolve(holder);
    });
    holder.once('error', reject);
    holder.once('exit', (code) =>
      code === TAKEN
        ? resolve(undefined)
        : reject(new SandboxUnavailableError(`could not lock ${path} with ${flock} (exit ${code})`)),
    );
  });
}
