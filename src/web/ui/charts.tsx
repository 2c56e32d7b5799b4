import { Failures } from './failures.js';
import type { Run } from './feed.js';

const MINUTES = 15;
const WIDTH = 300;
const HEIGHT = 60;

/**
 * Runs per minute over the last 15 minutes, p50/p99 duration and failures by cause, from the runs
 * the page holds (the feed's last 100 at load, and each since): plain SVG, no chart library.
 */
export function Charts({ runs }: { runs: readonly Run[] }) {
  const now = Date.now();
  const perMinute = Array.from({ length: MINUTES }, () => 0);
  for (const run of runs) {
    const ago = Math.floor((now - run.started_at) / 60_000);
    if (ago < MINUTES) perMinute[MINUTES - 1 - ago] = (perMinute[MINUTES - 1 - ago] ?? 0) + 1;
  }
  const durations = runs
    .filter((run) => run.ended_at !== null)
    .map((run) => (run.ended_at as number) - run.started_at)
    .sort((a, b) => a - b);
  const most = Math.max(1, ...perMinute);
  const bar = WIDTH / MINUTES;
  return (
    <div class="charts">
      <figure>
        <svg
          viewBox={`0 0 ${WIDTH} ${HEIGHT}`}
          width={WIDTH}
          height={HEIGHT}
          role="img"
          aria-label="runs per minute"
        >
          {perMinute.map((count, index) => {
            const height = (count / most) * (HEIGHT - 4);
            return (
              <rect key={index} x={index * bar + 1} y={HEIGHT - height} width={bar - 2} height={height}>
                <title>{`${count} run(s), ${MINUTES - 1 - index} min ago`}</title>
              </rect>
            );
          })}
        </svg>
        <figcaption>runs per minute, last {MINUTES} min</figcaption>
      </figure>
      <dl class="latency">
        <dt>p50</dt>
        <dd>{format(percentile(durations, 0.5))}</dd>
        <dt>p99</dt>
        <dd>{format(percentile(durations, 0.99))}</dd>
        <dt>runs</dt>
        <dd>{durations.length}</dd>
      </dl>
      <Failures runs={runs} />
    </div>
  );
}

function percentile(sorted: readonly number[], p: number): number | undefined {
  if (sorted.length === 0) return undefined;
  return sorted[Math.min(sorted.length - 1, Math.ceil(p * sorted.length) - 1)];
}

function format(ms: number | undefined): string {
  if (ms === undefined) return '–';
  return ms < 1000 ? `${ms} ms` : `${(ms / 1000).toFixed(2)} s`;
}
