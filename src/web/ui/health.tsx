import { useEffect, useState } from 'preact/hooks';
import { api } from './api.js';

interface Report {
  uptime_s: number;
  sandbox_mode: string;
  pool: { size: number; ready: Record<string, number> };
  sessions: number;
  runs: { running: number; queued: number; max: number };
  pending_approvals: number;
  downstream: { name: string; connected: boolean; circuit: string; tools: number | null; error?: string }[];
}

/** What the `health` tool reports, refreshed every 5 s. */
export function Health() {
  const [report, setReport] = useState<Report | null>(null);
  const [error, setError] = useState('');
  useEffect(() => {
    const load = () =>
      api<Report>('/api/health')
        .then(setReport)
        .catch((caught: Error) => setError(caught.message));
    void load();
    const timer = setInterval(load, 5000);
    return () => clearInterval(timer);
  }, []);
  if (error) return <p class="error">{error}</p>;
  if (!report) return <p class="muted">Loading health…</p>;
  const ready = Object.entries(report.pool.ready);
  return (
    <section>
      <h2>Health</h2>
      <dl class="health">
        <dt>Uptime</dt>
        <dd>{report.uptime_s} s</dd>
        <dt>Sandbox</dt>
        <dd>{report.sandbox_mode}</dd>
        <dt>Run slots</dt>
        <dd>
          {report.runs.running} running, {report.runs.queued} queued, of {report.runs.max}
        </dd>
        <dt>Warm pool</dt>
        <dd>
          size {report.pool.size}
          {ready.length > 0 && `: ${ready.map(([name, count]) => `${name} ${count}`).join(', ')} ready`}
        </dd>
        <dt>Your sessions</dt>
        <dd>{report.sessions}</dd>
        <dt>Pending approvals</dt>
        <dd>{report.pending_approvals}</dd>
        <dt>Downstream</dt>
        <dd>
          {report.downstream.length === 0
            ? 'none configured'
            : report.downstream
                .map(
                  (server) =>
                    `${server.name}: ${server.connected ? 'connected' : 'not connected'} (${server.circuit})`,
                )
                .join('; ')}
        </dd>
      </dl>
    </section>
  );
}
