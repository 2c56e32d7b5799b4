import {
  type CallToolResult,
  isInputRequiredResult,
  type McpServer,
  type ServerContext,
} from '@modelcontextprotocol/server';
import { outcomeOf } from '../metrics/index.js';
import { inCall, now, type OpenCall, type Tracing } from '../traces/index.js';
import { log } from '../util/index.js';
import { principalOf } from './connection.js';
import { isTaskHandle } from './tasks.js';

type Handler = (request: { params?: Record<string, unknown> }, ctx: ServerContext) => Promise<unknown>;

/**
 * A span per tools/call (OTEL_EXPORTER_OTLP_ENDPOINT set): the handler runs inside an OpenCall that
 * the gate's phase() calls record into; the span is made when the call answers. Wraps the Server's
 * handler hook as readTaskParams does: call before any tool is registered.
 */
export function traceToolCalls(server: McpServer, tracing: Tracing): void {
  const inner = server.server as unknown as { _wrapHandler(method: string, handler: Handler): Handler };
  const wrap = inner._wrapHandler.bind(inner);
  inner._wrapHandler = (method, handler) =>
    wrap(
      method,
      method !== 'tools/call'
        ? handler
        : async (request, ctx) => {
            const call: OpenCall = { start: now(), phases: [], open: true };
            let result: unknown;
            try {
              result = await inCall(call, () => handler(request, ctx));
              return result;
            } finally {
              call.open = false;
              // The call's answer must still reach the client: a span that cannot be made is said on stderr.
              try {
                tracing.record(
                  finished(call, request.params ?? {}, ctx, result as CallToolResult | undefined),
                );
              } catch (error) {
                log('warn', `traces: ${(error as Error).message}`);
              }
            }
          },
    );
}

function finished(
  call: OpenCall,
  params: Record<string, unknown>,
  ctx: ServerContext,
  result: CallToolResult | undefined,
) {
  const args = (params.arguments ?? {}) as Record<string, unknown>;
  const value = (result?.structuredContent ?? {}) as Record<string, unknown>;
  const text = (field: unknown) => (typeof field === 'string' ? field : undefined);
  const outcome = !result
    ? 'failed' // a protocol error (unknown tool): thrown, not answered
    : result.isError
      ? 'failed'
      : isTaskHandle(value)
        ? 'task'
        : isInputRequiredResult(result)
          ? 'input_required'
          : outcomeOf(value);
  return {
    tool: String(params.name),
    principal: principalOf(ctx),
    language: text(args.language) ?? text(value.language),
    sandboxMode: text(value.sandbox_mode),
    outcome,
    executionId: text(value.execution_id),
    errorCode: result?.isError ? (text(value.code) ?? 'ERROR') : result ? undefined : 'PROTOCOL_ERROR',
    start: call.start,
    end: now(),
    phases: call.phases,
  };
}
