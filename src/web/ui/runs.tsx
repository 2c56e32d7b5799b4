import { Charts } from './charts.js';
import type { Run } from './feed.js';

/** Runs in progress and recent ones, their output as it streams (Server-Sent Events). */
export function Runs({
  admin,
  runs,
  connected,
}: {
  admin: boolean;
  runs: ReadonlyMap<string, Run>;
  connected: boolean;
}) {
  const list = [...runs.values()].sort((a, b) => b.started_at - a.started_at);
  return (
    <section>
      <h2>
        Live runs <span class={connected ? 'live on' : 'live'}>{connected ? 'live' : 'reconnecting'}</span>
      </h2>
      <Charts runs={list} />
      {list.length === 0 && <p class="muted">No runs yet: they appear here as clients run code.</p>}
      {list.map((run) => (
        <article class={`run ${run.status}`} key={run.id} data-run={run.id} data-status={run.status}>
          <div class="meta">
            <span class="dot" />
            <b>{run.tool}</b> {run.language}
            {admin && <span class="tag">{run.principal}</span>}
            {run.session_id && <span class="tag">{run.session_id}</span>}
            <span class="muted">
              {new Date(run.started_at).toLocaleTimeString()} · {duration(run)}
              {run.exit_code !== null && ` · exit ${run.exit_code}`}
            </span>
          </div>
          <code class="code">{run.code}</code>
          {run.output && <pre class="output">{run.output}</pre>}
        </article>
      ))}
    </section>
  );
}

function duration(run: Run): string {
  if (run.ended_at === null) return 'running';
  const ms = run.ended_at - run.started_at;
  return ms < 1000 ? `${ms} ms` : `${(ms / 1000).toFixed(1)} s`;
}
