import { closeSync, openSync, readFileSync, statSync, unlinkSync, writeSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';

// A lock file for the few milliseconds an audit entry takes to chain and append. Several servers
// may share one CODEXEC_HOME (each MCP client starts its own); without it two of them would
// chain entries to the same predecessor and fork the chain.

const STALE_MS = 10_000;
const RETRY_MS = 2;
const GIVE_UP_MS = 30_000;

/**
 * Work done once per holding: on taking the lock, and just before letting it go (synchronously,
 * at exit too; it must not throw: it may run from a timer).
 */
export interface LockHooks {
  readonly onAcquire?: () => void;
  readonly onRelease?: () => void;
}

/**
 * The lock file at `path`, kept between tasks that follow each other closely and let go once
 * this process has been idle for `idleMs`, has held it for `maxHoldMs` (others wait meanwhile),
 * or exits. Creating and removing the file costs ~0.2 ms on a VM's ext4 (profiled: the largest
 * part of an audit entry), paid now once per burst of entries instead of once per entry.
 */
export class HeldLock {
  private heldSince = 0;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly path: string,
    private readonly hooks: LockHooks = {},
    private readonly idleMs = 20,
    private readonly maxHoldMs = 100,
  ) {}

  async run<T>(task: () => T): Promise<T> {
    clearTimeout(this.timer);
    if (this.held && Date.now() - this.heldSince > this.maxHoldMs) this.release();
    try {
      if (!this.held) {
        await acquire(this.path);
        this.heldSince = Date.now();
        if (holders.size === 0) process.on('exit', releaseAll);
        holders.add(this);
        this.hooks.onAcquire?.();
      }
      return task();
    } catch (error) {
      this.release();
      throw error;
    } finally {
      if (this.held) {
        this.timer = setTimeout(() => this.release(), this.idleMs);
        this.timer.unref();
      }
    }
  }

  private get held(): boolean {
    return holders.has(this);
  }

  release(): void {
    clearTimeout(this.timer);
    if (!this.held) return;
    try {
      this.hooks.onRelease?.();
    } finally {
      holders.delete(this);
      if (holders.size === 0) process.removeListener('exit', releaseAll);
      try {
        unlinkSync(this.path);
      } catch {} // gone already (its directory removed)
    }
  }
}

const holders = new Set<HeldLock>();
const releaseAll = () => {
  for (const holder of holders) holder.release();
};

async function acquire(path: string): Promise<void> {
  const started = Date.now();
  for (;;) {
    if (tryLock(path)) return;
    if (Date.now() - started > GIVE_UP_MS) {
      throw new Error(`${path} has been held for over ${GIVE_UP_MS / 1000} s; remove it if no codexec runs`);
    }
    await sleep(RETRY_MS);
  }
}

function tryLock(path: string): boolean {
  let fd: number;
  try {
    fd = openSync(path, 'wx', 0o600);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    if (isStale(path)) {
      try {
        unlinkSync(path);
      } catch {} // another process took it over first; try again
    }
    return false;
  }
  try {
    writeSync(fd, String(process.pid));
  } finally {
    closeSync(fd);
  }
  return true;
}

/** Held by a process that no longer exists, or for longer than any append takes. */
function isStale(path: string): boolean {
  try {
    const pid = Number(readFileSync(path, 'utf8'));
    if (Number.isInteger(pid) && pid > 0 && !isAlive(pid)) return true;
    return Date.now() - statSync(path).mtimeMs > STALE_MS;
  } catch {
    return false; // gone (released) or being written: retry
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}
