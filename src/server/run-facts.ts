import type { RunFacts } from '../approvals/index.js';
import { CONNECTIONS } from '../egress/index.js';

// What the audit keeps of a run is the approvals' audit stage's; the tools take it from here.
export type { RunFacts };

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
