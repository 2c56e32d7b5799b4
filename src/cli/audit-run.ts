import type { Services } from '../server/index.js';
import { currentPrincipal } from '../util/index.js';

const SUMMARY_CHARS = 500;

/** What was asked from the shell: `run` (a file or stdin) or `run_command` (`--command`). */
export interface ShellAttempt {
  readonly tool: 'run' | 'run_command';
  readonly language: string;
  readonly code: string;
}

/** What came of it: a result, nothing (the run threw), or a refusal by the named rule or pattern. */
export type ShellOutcome =
  | {
      readonly result?: {
        execution_id: string;
        exit_code: number | null;
        duration_ms: number;
        stdout: string;
      };
    }
  | { readonly refusedBy: string | null };

/**
 * The audit entry of a run from the shell: the server's trail, one entry per attempt. No gate
 * asks anyone here (whoever runs the CLI is the operator): `approved_by: "operator"`.
 */
export async function auditShellRun(
  services: Services,
  attempt: ShellAttempt,
  outcome: ShellOutcome,
): Promise<void> {
  const refused = 'refusedBy' in outcome;
  const result = refused ? undefined : outcome.result;
  await services.audit
    .record({
      tool: attempt.tool,
      execution_id: result?.execution_id ?? null,
      session_id: null,
      runtime: attempt.language,
      input_code: attempt.code,
      output_summary: result?.stdout.slice(0, SUMMARY_CHARS) ?? '',
      exit_code: result?.exit_code ?? null,
      duration_ms: result?.duration_ms ?? null,
      approved: !refused,
      approved_by: refused ? null : 'operator',
      rule: refused ? outcome.refusedBy : null,
      principal: currentPrincipal(),
      tool_calls: null,
    })
    .catch(() => {}); // the trail has said why on stderr; the run's own outcome still counts
}
