// The run cgroups a backend has made and not yet removed: when the server exits, however it exits
// through Node, their members are killed and what can be removed is.
import type { CgroupLayout, CgroupLimits, RunCgroup } from './cgroups.js';
import { RunCgroups } from './cgroups.js';

export class LiveCgroups {
  private readonly live = new Set<RunCgroup>();
  private exitHook = false;
  private made: RunCgroups | undefined;

  /** A run cgroup (a new one, or one an earlier run emptied), removed at exit if still there. */
  create(layout: CgroupLayout, limits: CgroupLimits): RunCgroup {
    this.made ??= new RunCgroups(layout);
    const cgroup = this.made.create(limits);
    this.track(cgroup);
    return cgroup;
  }

  /** Drain a run's cgroup: kept for the next run, or removed (and no longer tracked). */
  async release(cgroup: RunCgroup): Promise<void> {
    if (!(await this.made?.release(cgroup))) this.live.delete(cgroup);
  }

  private track(cgroup: RunCgroup): void {
    this.live.add(cgroup);
    if (this.exitHook) return;
    this.exitHook = true;
    process.once('exit', () => {
      for (const run of this.live) run.killAll();
      // Exit handlers are synchronous: give the kernel up to 200 ms to reap what was just killed.
      const tick = new Int32Array(new SharedArrayBuffer(4));
      for (let waited = 0; waited <= 200; waited += 5) {
        for (const run of this.live) if (run.tryRemove()) this.live.delete(run);
        if (this.live.size === 0) break;
        Atomics.wait(tick, 0, 0, 5);
      }
    });
  }
}
