// The audit hook: every attempt to run code is reported here — run, refused by policy, denied,
// or unanswerable — by the tool layer, after the run (with its result) or at the refusal. The
// audit trail (src/audit/, a service) is what the server plugs in.

/**
 * `operator`: `codexec run` from the shell, where no gate asks (whoever runs the CLI ran it).
 * `dashboard`: answered in serve --http's approval queue (CODEXEC_APPROVER), not by the client.
 */
export type ApprovedBy = 'auto' | 'client' | 'trusted_session' | 'policy' | 'operator' | 'dashboard';

export interface AuditAttempt {
  readonly tool: string; // execute_code, send_to_session, run_script, install_package, …
  readonly execution_id: string | null; // null when nothing ran
  readonly session_id: string | null;
  readonly runtime: string; // the language (install_package: 'python' | 'node' per its manager, code = the package spec)
  readonly input_code: string;
  readonly output_summary: string; // first 500 chars of the (already redacted) stdout; '' when nothing ran
  readonly exit_code: number | null;
  readonly duration_ms: number | null;
  readonly approved: boolean;
  readonly approved_by: ApprovedBy | null; // null when refused
  // the principal that decided in the dashboard (approved or denied); absent when nobody there did
  readonly decided_by?: string;
  readonly rule: string | null; // the rule id that decided, if any
  readonly principal: string; // who asked (serve --http's principal; `local` for stdio)
  // code mode: the downstream tool calls the code made (null: no code mode)
  readonly tool_calls: ReadonlyArray<{
    tool: string;
    success: boolean;
    duration_ms: number;
    error?: string;
  }> | null;
  // code mode: the calls past those in tool_calls, counted (absent: none were left out)
  readonly tool_calls_omitted?: ReadonlyArray<{ tool: string; success: boolean; count: number }>;
  // the egress allowlist: every connection the run made through the proxy (absent: none, or no allowlist)
  readonly network?: ReadonlyArray<{
    host: string;
    port: number;
    allowed: boolean;
    method: string;
    at: string;
    reason?: string;
    asked?: boolean;
  }>;
}

export interface AuditSink {
  record(attempt: AuditAttempt): Promise<void>;
}
