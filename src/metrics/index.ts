// Prometheus metrics of serve --http: runs, durations, pool, sessions, approvals, bridge, quotas.
// prom-client is loaded by loadMetrics only: stdio and the CLI get NO_METRICS and never load it.
import type { PrometheusMetrics } from './types.js';

export { recordQuotaRefusal, setQuotaSink } from './quota.js';
export {
  type MetricSources,
  type Metrics,
  NO_METRICS,
  type Outcome,
  outcomeOf,
  type PrometheusMetrics,
} from './types.js';

/** A fresh registry (not prom-client's global one) with codexec's metrics and the process's. */
export async function loadMetrics(): Promise<PrometheusMetrics> {
  const { createPrometheusMetrics } = await import('./prometheus.js');
  return createPrometheusMetrics();
}
