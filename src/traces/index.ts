// Traces over OTLP/HTTP when OTEL_EXPORTER_OTLP_ENDPOINT is set: a span per tool call, its run's
// phases as children. Unset, the OpenTelemetry packages are never loaded (otel.ts is imported here only).
import type { Tracing } from './calls.js';

export {
  type FinishedCall,
  inCall,
  now,
  type OpenCall,
  type Phase,
  phase,
  type Tracing,
} from './calls.js';

/** The tracing the standard OTel variables ask for, or undefined (and nothing loaded) without an endpoint. */
export async function startTracing(env: NodeJS.ProcessEnv, version: string): Promise<Tracing | undefined> {
  if (!env.OTEL_EXPORTER_OTLP_ENDPOINT && !env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) return undefined;
  const { OtelTracing } = await import('./otel.js');
  return new OtelTracing(env.OTEL_SERVICE_NAME || 'codexec', version);
}
