// What the gate reports for one attempt to run code, and what the audit file holds for it.

export type ApprovedBy = 'auto' | 'client' | 'trusted_session' | 'policy';

/** One attempt to run code, allowed or refused, as the gate reports it. */
export interface AuditAttempt {
  readonly tool: string;
  /** null when nothing ran. */
  readonly execution_id: string | null;
  readonly session_id: string | null;
  /** The language (install_package: the package manager's language). */
  readonly runtime: string;
  readonly input_code: string;
  /** First 500 characters of the (already redacted) stdout; '' when nothing ran. */
  readonly output_summary: string;
  readonly exit_code: number | null;
  readonly duration_ms: number | null;
  readonly approved: boolean;
  /** null when refused. */
  readonly approved_by: ApprovedBy | null;
  /** The policy rule that decided, if one did. */
  readonly rule: string | null;
}

/** Where attempts go; the server's gate calls it once per attempt. */
export interface AuditSink {
  record(attempt: AuditAttempt): Promise<void>;
}
