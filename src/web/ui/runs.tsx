import { useEffect, useState } from 'preact/hooks';
import { follow } from './api.js';
import { Charts } from './charts.js';

/** A run as /api/events sends it (src/server/feed.ts LiveRun). */
export interface Run {
  id: string;
  principal: string;
  tool: string;
  language: string;
  session_id: string | null;
  code: string;
  started_at: number;
  ended_at: number | null;
  status: 'running' | 'done' | 'failed';
  exit_code: number | null;
  execution_id: string | null;
  output: string;
}

type FeedMessage =
  | { type: 'run'; run: Omit<Run, 'output'> }
  | { type: 'output'; id: string; text: string }
  | { runs: Run[] };

const MAX_OUTPUT = 16_000;

/** Runs in progress and recent ones, their output as it streams (Server-Sent Events). */
export function Runs({ admin }: { admin: boolean }) {
  const [runs, setRuns] = useState<ReadonlyMap<string, Run>>(new Map());
  const [connected, setConnected] = useState(false);
  useEffect(() => {
    const stop = new AbortController();
    void follow(
      (type, data) => setRuns((current) => apply(current, type, data as FeedMessage)),
      setConnected,
      stop.signal,
    );
    return () => stop.abort();
  }, []);
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

function apply(
  current: ReadonlyMap<string, Run>,
  type: string,
  message: FeedMessage,
): ReadonlyMap<string, Run> {
  if (type === 'snapshot' && 'runs' in message) return new Map(message.runs.map((run) => [run.id, run]));
  const next = new Map(current);
  if ('run' in message) {
    next.set(message.run.id, { ...message.run, output: current.get(message.run.id)?.output ?? '' });
  } else if ('text' in message) {
    const run = next.get(message.id);
    if (run) next.set(run.id, { ...run, output: (run.output + message.text).slice(-MAX_OUTPUT) });
  }
  return next;
}

function duration(run: Run): string {
  if (run.ended_at === null) return 'running';
  const ms = run.ended_at - run.started_at;
  return ms < 1000 ? `${ms} ms` : `${(ms / 1000).toFixed(1)} s`;
}
