import type { ToolCallCount, ToolCallRecord } from '../bridge/index.js';
import { CONNECTIONS, type LoggedConnection } from '../egress/index.js';
import type { ApprovedBy, AuditAttempt, AuditSink } from '../policy/index.js';
import { currentPrincipal, log } from '../util/index.js';

/** One attempt to run code, as the gate, the approvers and the audit see it. */
export interface Attempt {
  readonly tool: string;
  readonly language: string;
  readonly code: string;
  readonly sessionId: string | null;
  /** Runtimes any one of which allows it (install_package for node: node or typescript). */
  readonly runtimes?: readonly string[];
  /** Code mode: what else the run may do, shown in the approval form (allowed tools, sampling). */
  readonly powers?: string | undefined;
  /** Where the code works, shown in the approval form (placeShown). */
  readonly place?: string | undefined;
  /** Whether it takes one of the server's run slots (false: write_file, which runs nothing). */
  readonly runs?: boolean;
}

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

/** Whether an attempt went through, who let it, and the rule that decided. */
export type Verdict = Pick<AuditAttempt, 'approved' | 'approved_by' | 'rule' | 'decided_by'>;

/** Who let an approved run through: the audit's `approved_by`, and the dashboard's decider. */
export type Approval = { readonly approved_by: ApprovedBy; readonly decided_by?: string };

const SUMMARY_CHARS = 500;

/**
 * Write the audit entry of `attempt` under the caller's principal: its verdict, and what the run
 * did when it ran (`facts`). Never throws: the run's own result must still reach the client, so
 * a broken sink is loud on stderr instead.
 */
export async function audit(
  sink: AuditSink,
  attempt: Attempt,
  verdict: Verdict,
  facts?: RunFacts,
): Promise<void> {
  const entry: AuditAttempt = {
    tool: attempt.tool,
    execution_id: facts?.execution_id ?? null,
    session_id: attempt.sessionId,
    runtime: attempt.language,
    input_code: attempt.code,
    output_summary: facts?.stdout.slice(0, SUMMARY_CHARS) ?? '',
    exit_code: facts?.exit_code ?? null,
    duration_ms: facts?.duration_ms ?? null,
    ...verdict,
    principal: currentPrincipal(),
    tool_calls: facts?.tool_calls ?? null,
    ...(facts?.tool_calls_omitted && { tool_calls_omitted: facts.tool_calls_omitted }),
    ...(facts?.[CONNECTIONS] && { network: facts[CONNECTIONS] }),
  };
  await sink.record(entry).catch((error: Error) => log('error', `audit: ${error.message}`));
}
