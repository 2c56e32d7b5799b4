/** Weight of the newest sample in the smoothed arrival gap and start time. */
const SMOOTHING = 0.3;

/**
 * How fast one kind's runs arrive and how long one of its warm processes takes to start (until
 * its driver says it waits), both smoothed: while a start is under way `startMs / gap` more runs
 * arrive, so that many processes (and one for the run now) must be ready or starting for none to
 * wait for a start. Starts vary (a container's from 0.3 to over 1 s on a busy machine): a start
 * counts as its mean plus twice its mean deviation, as TCP bounds a round trip. A pause counts as
 * a gap as long as it lasts: the target falls back when requests stop.
 */
export class Demand {
  private lastArrival: number | undefined;
  private gapMs: number | undefined;
  private startMs: number | undefined;
  private startDeviation = 0;

  /** A run asked for a process at `now` (ms). */
  arrived(now: number): void {
    if (this.lastArrival !== undefined) this.gapMs = smooth(this.gapMs, Math.max(now - this.lastArrival, 1));
    this.lastArrival = now;
  }

  /** One start took `ms`, from the call to the driver's word that it waits. */
  started(ms: number): void {
    if (this.startMs !== undefined)
      this.startDeviation = smooth(this.startDeviation, Math.abs(ms - this.startMs));
    this.startMs = smooth(this.startMs, ms);
  }

  /** Processes to keep ready or starting: at least `min`, at most `max`. */
  target(min: number, max: number, now: number): number {
    if (this.gapMs === undefined || this.startMs === undefined || this.lastArrival === undefined) return min;
    const gap = Math.max(this.gapMs, now - this.lastArrival);
    const start = this.startMs + 2 * this.startDeviation;
    return Math.min(max, Math.max(min, Math.ceil(start / gap) + 1));
  }
}

function smooth(previous: number | undefined, sample: number): number {
  return previous === undefined ? sample : previous + SMOOTHING * (sample - previous);
}
