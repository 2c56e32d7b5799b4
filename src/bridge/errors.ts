export type BridgeErrorCode =
  | 'TOOL_NOT_ALLOWED'
  | 'TOOL_NOT_FOUND'
  | 'INVALID_ARGUMENTS'
  | 'RATE_LIMITED'
  | 'CIRCUIT_OPEN'
  | 'QUEUE_FULL'
  | 'QUEUE_TIMEOUT'
  | 'SAMPLING_UNAVAILABLE'
  | 'SAMPLING_LIMIT'
  | 'SAMPLING_FAILED'
  | 'DOWNSTREAM_UNAVAILABLE'
  | 'DOWNSTREAM_ERROR'
  | 'CALL_ABORTED';

/** A code-mode call that failed: its code and message reach the sandboxed code as they are. */
export class BridgeError extends Error {
  constructor(
    readonly code: BridgeErrorCode,
    message: string,
  ) {
    super(message);
    this.name = 'BridgeError';
  }
}
