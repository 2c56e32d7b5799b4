import { closeSync, openSync, readFileSync, statSync, unlinkSync, writeSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';

// A lock file for the few milliseconds an audit entry takes to chain and append. Several servers
// may share one CODEXEC_HOME (each MCP client starts its own); without it two of them would
// chain entries to the same predecessor and fork the chain.

const STALE_MS = 10_000;
const RETRY_MS = 2;
const GIVE_UP_MS = 30_000;

/** Run `task` holding the lock file at `path`; a lock left by a dead process is taken over. */
export async function withLock<T>(path: string, task: () => T): Promise<T> {
  const started = Date.now();
  for (;;) {
    if (tryLock(path)) break;
    if (Date.now() - started > GIVE_UP_MS) {
      throw new Error(`${path} has been held for over ${GIVE_UP_MS / 1000} s; remove it if no codexec runs`);
    }
    await sleep(RETRY_MS);
  }
  try {
    return task();
  } finally {
    unlinkSync(path);
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
