import type { ToolCallCount, ToolCallRecord } from '../bridge/index.js';
import { CONNECTIONS, type LoggedConnection } from '../egress/index.js';

/** What the audit keeps of a finished run. */
export interface RunFacts {
  readonly execution_id: string | null;
  readonly exit_code: number | null;
  readonly duration_ms: number | null;
  readonly stdout: string;
  /** Code mode: the downstream tool calls the code made. */
  readonly tool_calls?: readonly ToolCallRecord[] | undefined;
  /** Code mode: the calls past those, counted per tool and outcome. */
  readonly tool_calls_omitted?: readonly ToolCallCount[] | undefined;
  /** The egress allowlist: every connection the run made through the proxy. */
  readonly [CONNECTIONS]?: readonly LoggedConnection[] | undefined;
}

/** A result without what only the audit keeps (a run's every connection): the client's. */
export function wireOnly<R>(result: R): R {
  if (typeof result !== 'object' || result === null || !(CONNECTIONS in result)) return result;
  const { [CONNECTIONS]: _audited, ...wire } = result as R & RunFacts;
  return wire as R;
}

/** What the audit keeps of any run's result (one-shot, send, command: all carry these). */
export function runFacts(result: RunFacts): RunFacts {
  const { execution_id, exit_code, duration_ms, stdout, tool_calls, tool_calls_omitted } = result;
  return {
    execution_id,
    exit_code,
    duration_ms,
    stdout,
    ...(tool_calls && { tool_calls }),
    ...(tool_calls_omitted && { tool_calls_omitted }),
    ...(result[CONNECTIONS] && { [CONNECTIONS]: result[CONNECTIONS] }),
  };
}
