import type { IncomingMessage, ServerResponse } from 'node:http';
import type { MetricSources, PrometheusMetrics } from '../../metrics/index.js';
import type { Services } from '../services.js';

/** What the gauges read at a scrape: the services' own counts, nothing kept on the side. */
export function metricSources(services: Services): MetricSources {
  return {
    pool: () => services.engine.poolStatus(),
    sessions: () => services.sessions.liveCount(),
    slots: () => services.slots.status(),
    pendingApprovals: () => services.pendingApprovals.count,
    circuits: () => services.bridge.health(),
  };
}

/** GET /metrics, once the caller passed the auth check (or CODEXEC_METRICS_PUBLIC=true). */
export async function answerMetrics(
  req: IncomingMessage,
  res: ServerResponse,
  metrics: PrometheusMetrics,
): Promise<void> {
  const text = await metrics.text();
  res.writeHead(200, { 'content-type': metrics.contentType, 'cache-control': 'no-store' });
  res.end(req.method === 'HEAD' ? undefined : text);
}
