// Persistent REPL sessions: one long-lived sandboxed driver process per session (python, node,
// typescript, bash), code and control on fd 3, sends queued, idle kill, lifecycle logged.

export { DRIVERS, type DriverSpec } from './drivers.js';
export {
  ProcessNotFoundError,
  SessionLimitError,
  SessionLostError,
  SessionNotFoundError,
  SessionStartError,
} from './errors.js';
export { SessionManager, type SessionManagerDeps } from './manager.js';
export { prepareCell, redeclarable, rewriteImports } from './prepare.js';
export type { OutputPage } from './process-output.js';
export { type ProcessInfo, READ_MAX_BYTES } from './processes.js';
export { type DriverMessage, type ExecMessage, encodeFrame, FrameDecoder } from './protocol.js';
export { assertPtyLanguage } from './pty.js';
export type {
  CloseResult,
  EndReason,
  SendRequest,
  SendResult,
  SessionDirectory,
  SessionInfo,
  StartRequest,
  StartResult,
} from './types.js';
