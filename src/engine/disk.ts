import { type DiskQuota, type DiskWatch, RUN_TIMING } from '../disk/index.js';
import type { SandboxedProcess } from '../sandbox/index.js';
import type { Snapshot } from './artifacts.js';
import type { Collected } from './collect.js';

/**
 * One run's share of the disk bounds: its workspace is sampled on a timer while it runs (killed
 * past a bound), and what it leaves is recorded from the artifact snapshot the run takes anyway,
 * so a short run is never walked on its own path.
 */
export class RunDisk {
  private watch: DiskWatch | undefined;

  constructor(
    private readonly quota: DiskQuota,
    private readonly dir: string,
    private readonly principal: string,
  ) {}

  start(proc: SandboxedProcess): void {
    this.watch = this.quota.watch(this.dir, this.principal, RUN_TIMING, () => proc.kill('SIGKILL'));
  }

  /**
   * The outcome with the disk bound applied: killed by the watcher, or over at its end by the
   * snapshot of its workspace (`after`; undefined when the run worked elsewhere).
   */
  settle(outcome: Collected, after: Snapshot | undefined): Collected {
    this.watch?.stop();
    let note = this.watch?.over && `${this.watch.over}; process killed`;
    if (!note && after) {
      let bytes = 0;
      for (const file of after.values()) bytes += file.size;
      const over = this.quota.check(this.dir, this.principal, bytes);
      if (over) note = `${over} when the run ended`;
    }
    if (!note) return outcome;
    return { ...outcome, stderr: `${outcome.stderr}\n[codexec: ${note}]\n`, limit: 'disk' };
  }

  /** The run is over: a kept workspace is measured in full (in the background), else forgotten. */
  end(kept: boolean): Promise<unknown> {
    this.watch?.stop();
    if (!kept) {
      this.quota.forget(this.dir);
      return Promise.resolve();
    }
    return this.quota.measure(this.dir, this.principal).catch(() => this.quota.forget(this.dir));
  }
}
