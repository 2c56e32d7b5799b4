// Errors with stable string codes. The tool layer turns them into `isError` results
// ({ success: false, error, code }); anything else that escapes is reported as INTERNAL.

export type ErrorCode =
  | 'INVALID_INPUT'
  | 'FORBIDDEN_PATH'
  | 'NOT_FOUND'
  | 'SESSION_NOT_FOUND'
  | 'SESSION_LOST'
  | 'LIMIT_REACHED'
  | 'QUOTA_EXCEEDED'
  | 'BLOCKED_BY_POLICY'
  | 'COMMAND_BLOCKED'
  | 'PACKAGES_MISSING'
  | 'SANDBOX_UNAVAILABLE'
  | 'CONFIG_INVALID'
  | 'RUNTIME_NOT_ALLOWED'
  | 'POLICY_DENIED'
  | 'APPROVAL_DENIED'
  | 'APPROVAL_UNAVAILABLE'
  /** The caller may not do this (the dashboard's approvals: not an approver, or its own call). */
  | 'FORBIDDEN'
  | 'INTERNAL';

export class CodexecError extends Error {
  readonly code: ErrorCode;

  constructor(code: ErrorCode, message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'CodexecError';
    this.code = code;
  }
}

export class InvalidInputError extends CodexecError {
  constructor(message: string) {
    super('INVALID_INPUT', message);
    this.name = 'InvalidInputError';
  }
}

export class ForbiddenPathError extends CodexecError {
  constructor(message: string) {
    super('FORBIDDEN_PATH', message);
    this.name = 'ForbiddenPathError';
  }
}

export class ConfigError extends CodexecError {
  constructor(message: string) {
    super('CONFIG_INVALID', message);
    this.name = 'ConfigError';
  }
}

export class SandboxUnavailableError extends CodexecError {
  constructor(message: string) {
    super('SANDBOX_UNAVAILABLE', message);
    this.name = 'SandboxUnavailableError';
  }
}

/** execute_command refused a command line: `pattern` names the allow/deny pattern or rule that decided. */
export class CommandBlockedError extends CodexecError {
  constructor(
    message: string,
    readonly pattern: string,
  ) {
    super('COMMAND_BLOCKED', message);
    this.name = 'CommandBlockedError';
  }
}

/** The language is not in CODEXEC_ALLOWED_RUNTIMES. */
export class RuntimeNotAllowedError extends CodexecError {
  constructor(message: string) {
    super('RUNTIME_NOT_ALLOWED', message);
    this.name = 'RuntimeNotAllowedError';
  }
}

/** A policy rule with action `deny` matched the code; `rule` is its id. */
export class PolicyDeniedError extends CodexecError {
  constructor(
    message: string,
    readonly rule: string,
  ) {
    super('POLICY_DENIED', message);
    this.name = 'PolicyDeniedError';
  }
}

/** The client denied, declined or cancelled the approval, or did not answer in time. */
export class ApprovalDeniedError extends CodexecError {
  constructor(message: string) {
    super('APPROVAL_DENIED', message);
    this.name = 'ApprovalDeniedError';
  }
}

/** The run needs approval but the client cannot be asked (no elicitation capability). */
export class ApprovalUnavailableError extends CodexecError {
  constructor(message: string) {
    super('APPROVAL_UNAVAILABLE', message);
    this.name = 'ApprovalUnavailableError';
  }
}

/** Which of a principal's quotas (CODEXEC_QUOTAS) a refused call hit. */
export type QuotaLimit = 'max_concurrent_runs' | 'max_sessions' | 'runs_per_minute' | 'cpu_seconds_per_day';

/**
 * A principal's own quota (CODEXEC_QUOTAS) is used up: nothing ran. `retryAfterMs`: when the
 * limit frees (per-minute and per-day limits); absent where it frees when a run or session ends.
 */
export class QuotaExceededError extends CodexecError {
  constructor(
    message: string,
    readonly limit: QuotaLimit,
    readonly retryAfterMs?: number,
  ) {
    super('QUOTA_EXCEEDED', message);
    this.name = 'QuotaExceededError';
  }

  /** What the tool result carries besides the sentence and the code. */
  fields(): { limit: QuotaLimit; setting: 'CODEXEC_QUOTAS'; retry_after_ms?: number } {
    return {
      limit: this.limit,
      setting: 'CODEXEC_QUOTAS',
      ...(this.retryAfterMs !== undefined && { retry_after_ms: this.retryAfterMs }),
    };
  }
}

/** Narrow anything thrown to a CodexecError, keeping the original as `cause`. */
export function toCodexecError(error: unknown): CodexecError {
  if (error instanceof CodexecError) return error;
  const message = error instanceof Error ? error.message : String(error);
  return new CodexecError('INTERNAL', `internal error: ${message}`, { cause: error });
}
