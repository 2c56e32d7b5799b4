import type { Run } from './feed.js';

const WIDTH = 300;
const ROW = 16;
const LABEL = 96;

/** The causes always shown, in this order; a limit gets a row per kind it stopped runs for. */
const CAUSES: ReadonlyArray<readonly [string, string]> = [
  ['error', 'error exit'],
  ['timeout', 'timeout'],
  ['cancelled', 'cancelled'],
  ['limit', 'limit'],
  ['failed', 'no result'],
];

/**
 * Failures by cause over the ended runs the page holds, by the server's outcome (the metrics'
 * outcomeOf): a non-zero exit, a timeout, a cancel, a resource limit (by kind), a run that threw.
 * The feed holds approved runs only: a refusal (policy, approval, quota) never reaches it. A send
 * left waiting for input is not a failure.
 */
export function Failures({ runs }: { runs: readonly Run[] }) {
  const ended = runs.filter((run) => run.ended_at !== null);
  const counts = new Map<string, number>();
  for (const run of ended) {
    if (run.outcome === null || run.outcome === 'ok' || run.outcome === 'waiting') continue;
    const cause = run.outcome === 'limit' ? `limit:${run.limit}` : run.outcome;
    counts.set(cause, (counts.get(cause) ?? 0) + 1);
  }
  const limits = [...counts].filter(([key]) => key.startsWith('limit:'));
  const rows: Array<readonly [string, string, number]> = [];
  for (const [cause, label] of CAUSES) {
    if (cause === 'limit' && limits.length > 0) {
      for (const [key, count] of limits) rows.push([key, `limit: ${key.slice(6)}`, count]);
    } else rows.push([cause, label, counts.get(cause) ?? 0]);
  }
  const failed = rows.reduce((sum, row) => sum + row[2], 0);
  const most = Math.max(1, ...rows.map((row) => row[2]));
  const since = Math.min(...ended.map((run) => run.started_at));
  const height = rows.length * ROW + 4;
  return (
    <figure class="failures">
      <svg
        viewBox={`0 0 ${WIDTH} ${height}`}
        width={WIDTH}
        height={height}
        role="img"
        aria-label="failures by cause"
      >
        {rows.map(([cause, label, count], index) => {
          const y = index * ROW + 2;
          const width = (count / most) * (WIDTH - LABEL - 30);
          return (
            <g key={cause} data-cause={cause} data-count={count}>
              <text x={4} y={y + 11}>
                {label}
              </text>
              <rect x={LABEL} y={y + 2} width={width} height={ROW - 4} />
              <text x={LABEL + width + 4} y={y + 11}>
                {count}
              </text>
            </g>
          );
        })}
      </svg>
      <figcaption>
        failures by cause: {failed} of {ended.length} ended run(s)
        {ended.length > 0 && ` since ${new Date(since).toLocaleTimeString()}`}
      </figcaption>
    </figure>
  );
}
