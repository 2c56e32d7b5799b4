// Diagnostics for the operator. stdout belongs to the MCP protocol, so every line goes to stderr.

export type LogLevel = 'debug' | 'info' | 'warn' | 'error';

const ORDER: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40 };
let threshold: LogLevel = 'info';

export function setLogLevel(level: LogLevel): void {
  threshold = level;
}

type LogListener = (level: LogLevel, message: string) => void;
const listeners = new Set<LogListener>();

/**
 * Hand every line said at or above the level to `listener` too (MCP clients that take the
 * server's log: server/client-log.ts); returns its removal.
 */
export function onLog(listener: LogListener): () => void {
  listeners.add(listener);
  return () => listeners.delete(listener);
}

export function log(level: LogLevel, message: string): void {
  if (ORDER[level] < ORDER[threshold]) return;
  process.stderr.write(`codexec ${level}: ${message}\n`);
  for (const listener of listeners) listener(level, message);
}

/**
 * A line said at every log level: what an operator cannot do without (where `--port 0` is
 * listening), written as an info line is.
 */
export function logAlways(message: string): void {
  process.stderr.write(`codexec info: ${message}\n`);
}
