import { ROOT_CONTEXT, type Span, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BatchSpanProcessor, NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import type { FinishedCall, Tracing } from './calls.js';

/**
 * The official SDK's provider with a batching OTLP/HTTP exporter, which reads the standard
 * OTEL_EXPORTER_OTLP_* variables (endpoint, headers, timeout) itself. Not registered as the global
 * provider: spans are made here, at a call's end, with explicit parents and times, so no context
 * manager runs on every async hop.
 */
export class OtelTracing implements Tracing {
  private readonly provider: NodeTracerProvider;
  private readonly tracer;

  constructor(serviceName: string, version: string) {
    this.provider = new NodeTracerProvider({
      resource: resourceFromAttributes({ 'service.name': serviceName, 'service.version': version }),
      spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter())],
    });
    this.tracer = this.provider.getTracer('codexec', version);
  }

  record(call: FinishedCall): void {
    const span = this.tracer.startSpan(
      `tools/call ${call.tool}`,
      { kind: SpanKind.SERVER, startTime: call.start, attributes: attributesOf(call) },
      ROOT_CONTEXT,
    );
    if (call.errorCode !== undefined) span.setStatus({ code: SpanStatusCode.ERROR, message: call.errorCode });
    const parent = trace.setSpan(ROOT_CONTEXT, span);
    for (const phase of call.phases) {
      const child: Span = this.tracer.startSpan(phase.name, { startTime: phase.start }, parent);
      child.end(phase.end);
    }
    span.end(call.end);
  }

  flush(): Promise<void> {
    return this.provider.forceFlush();
  }

  shutdown(): Promise<void> {
    return this.provider.shutdown(); // flushes the batch first
  }
}

function attributesOf(call: FinishedCall): Record<string, string> {
  return {
    'codexec.tool': call.tool,
    'codexec.principal': call.principal,
    'codexec.outcome': call.outcome,
    ...(call.language !== undefined && { 'codexec.language': call.language }),
    ...(call.sandboxMode !== undefined && { 'codexec.sandbox_mode': call.sandboxMode }),
    ...(call.executionId !== undefined && { 'codexec.execution_id': call.executionId }),
    ...(call.errorCode !== undefined && { 'codexec.error_code': call.errorCode }),
  };
}
