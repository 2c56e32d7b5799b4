import { CodexecError } from '../errors/index.js';

/** No live session has this id (never existed, closed, idle-killed or crashed). */
export class SessionNotFoundError extends CodexecError {
  constructor(message: string) {
    super('SESSION_NOT_FOUND', message);
    this.name = 'SessionNotFoundError';
  }
}

/** CODEXEC_MAX_SESSIONS sessions are already running. */
export class SessionLimitError extends CodexecError {
  constructor(message: string) {
    super('LIMIT_REACHED', message);
    this.name = 'SessionLimitError';
  }
}

/** The driver could not be started or never said it was ready. */
export class SessionStartError extends CodexecError {
  constructor(message: string) {
    super('SANDBOX_UNAVAILABLE', message);
    this.name = 'SessionStartError';
  }
}

/** No process of the caller's has this id (never existed, another principal's, or forgotten). */
export class ProcessNotFoundError extends CodexecError {
  constructor(message: string) {
    super('NOT_FOUND', message);
    this.name = 'ProcessNotFoundError';
  }
}
