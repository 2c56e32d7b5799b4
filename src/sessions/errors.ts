import { CodexecError } from '../errors/index.js';

/** No live session has this id (never existed, closed, idle-killed or crashed). */
export class SessionNotFoundError extends CodexecError {
  constructor(message: string) {
    super('SESSION_NOT_FOUND', message);
    this.name = 'SessionNotFoundError';
  }
}

/**
 * The session lived on another replica (serve --http with a postgres store) that is gone: it
 * stopped beating or refused the forwarded call. Its state is lost with it.
 */
export class SessionLostError extends CodexecError {
  constructor(sessionId: string) {
    super(
      'SESSION_LOST',
      `session ${sessionId} is lost: the replica that ran it is gone, and its state with it; start_session makes a new one`,
    );
    this.name = 'SessionLostError';
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
