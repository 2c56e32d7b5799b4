// Retention of the workspaces runs kept for their files (`exec_*`): removed once unchanged for
// CODEXEC_WORKSPACE_RETENTION_HOURS, on a timer and soon after start-up (with a dead server's
// leftovers, sweep.ts); never one a live process uses, never anything outside the sandbox dir.
import { lstatSync, readdirSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { log } from '../util/index.js';
import { namedByAny, referencedPaths, SWEEP_MIN_AGE_MS, sweepWorkspaces } from './sweep.js';

export interface RetentionOptions {
  readonly sandboxDir: string;
  readonly maxAgeMs: number;
  /** A workspace a run or session of this server is using now (never removed). */
  readonly inUse?: (dir: string) => boolean;
  /** Called for each workspace removed (its disk is no longer its principal's). */
  readonly onRemoved?: (dir: string) => void;
  /**
   * After the first pass, called for each run workspace left that was last changed before this
   * server started (kept by an earlier server within its retention: not this one's warm or
   * running ones), so its disk is counted for its principal again.
   */
  readonly onKept?: (dir: string) => Promise<void>;
}

/** The first pass comes this long after start-up: a client's throwaway probe copy does no I/O. */
export const RETENTION_FIRST_MS = SWEEP_MIN_AGE_MS;

/**
 * Remove the run workspaces of `sandboxDir` unchanged for `maxAgeMs` (their directory's mtime)
 * that no live process names. A workspace is a real directory named like ours, directly in the
 * sandbox dir; `rm` removes symbolic links inside it as links, never what they point to.
 */
export async function expireWorkspaces(options: RetentionOptions, now = Date.now()): Promise<string[]> {
  const { sandboxDir, maxAgeMs } = options;
  const old = runWorkspaces(sandboxDir).filter((dir) => {
    try {
      return now - lstatSync(dir).mtimeMs > maxAgeMs && !options.inUse?.(dir);
    } catch {
      return false; // gone meanwhile
    }
  });
  if (old.length === 0) return [];
  const used = referencedPaths();
  const removed: string[] = [];
  for (const dir of old) {
    if (namedByAny(used, dir)) continue;
    try {
      await rm(dir, { recursive: true, force: true });
      removed.push(dir);
      options.onRemoved?.(dir);
    } catch (error) {
      log('warn', `could not remove expired workspace ${dir}: ${(error as Error).message}`);
    }
  }
  return removed;
}

/**
 * Sweeps soon after start() (a dead server's leftovers, then expired workspaces), then every
 * quarter of the retention time (between a minute and an hour). The timers never keep the
 * process alive.
 */
export class WorkspaceRetention {
  private timers: NodeJS.Timeout[] = [];
  private running: Promise<unknown> = Promise.resolve();
  private startedAt = Number.POSITIVE_INFINITY;

  constructor(private readonly options: RetentionOptions) {}

  start(): void {
    if (this.timers.length > 0) return;
    this.startedAt = Date.now();
    const every = Math.min(3_600_000, Math.max(60_000, this.options.maxAgeMs / 4));
    this.timers.push(setTimeout(() => this.pass(true), RETENTION_FIRST_MS).unref());
    this.timers.push(setInterval(() => this.pass(false), every).unref());
  }

  /** Stop the timers and wait for a pass under way. */
  async stop(): Promise<void> {
    for (const timer of this.timers) clearTimeout(timer);
    this.timers = [];
    await this.running;
  }

  private pass(leftovers: boolean): void {
    const { sandboxDir, onRemoved } = this.options;
    this.running = this.running.then(async () => {
      try {
        if (leftovers) {
          const { removed } = await sweepWorkspaces(sandboxDir);
          for (const dir of removed) onRemoved?.(dir);
          if (removed.length > 0)
            log('info', `removed ${removed.length} workspace(s) left by a stopped server`);
        }
        const expired = await expireWorkspaces(this.options);
        if (expired.length > 0) log('info', `removed ${expired.length} workspace(s) past their retention`);
        if (leftovers && this.options.onKept)
          for (const dir of runWorkspaces(sandboxDir).filter((dir) => changedBefore(dir, this.startedAt)))
            await this.options.onKept(dir);
      } catch (error) {
        log('warn', `could not sweep the workspaces: ${(error as Error).message}`);
      }
    });
  }
}

function changedBefore(dir: string, when: number): boolean {
  try {
    return lstatSync(dir).mtimeMs < when;
  } catch {
    return false; // gone meanwhile
  }
}

/** The run workspaces in `sandboxDir`: real directories (not links) named like ours. */
function runWorkspaces(sandboxDir: string): string[] {
  try {
    return readdirSync(sandboxDir, { withFileTypes: true })
      .filter((entry) => entry.isDirectory() && /^exec_[0-9a-f]{12}$/.test(entry.name))
      .map((entry) => join(sandboxDir, entry.name));
  } catch {
    return [];
  }
}
