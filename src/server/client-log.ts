// The server's own log lines as MCP `notifications/message` (the logging capability), for clients
// that take them; never a run's output (the log says what the server did, not what code printed).
// A line said while a tool call is handled goes to that call's client, in its era's way: the
// 2025-11-25 era at the level `logging/setLevel` chose (any, until one is chosen), the 2026-07-28
// era only at a level the request itself names (the SDK's `mcpReq.log`). Any other line (start-up,
// sweeps, a session's end noticed later) goes over stdio only, and only to a 2025-era client that
// asked with `logging/setLevel`: over HTTP it may concern another principal's work. Stderr keeps
// every line either way. A client is shown a line's first line (never a stack), secrets masked.
import { AsyncLocalStorage } from 'node:async_hooks';
import type { LoggingLevel, McpServer, ServerContext } from '@modelcontextprotocol/server';
import { z } from 'zod';
import type { SecretsFilter } from '../policy/index.js';
import { LOCAL_PRINCIPAL, type LogLevel, onLog } from '../util/index.js';
import { isStdio, principalOf } from './connection.js';

const LEVELS: Record<LogLevel, LoggingLevel> = {
  debug: 'debug',
  info: 'info',
  warn: 'warning',
  error: 'error',
};
/** The longest line a client is sent (a path-heavy warning fits). */
const MAX_CHARS = 2000;
const LOGGER = 'codexec';

/** MCP's levels, least severe first. */
const SEVERITY = [
  'debug',
  'info',
  'notice',
  'warning',
  'error',
  'critical',
  'alert',
  'emergency',
] as const satisfies readonly LoggingLevel[];
/**
 * The level a 2025-era client chose with `logging/setLevel`, per principal: the stdio client's, or
 * over HTTP the bearer token's principal's (shared by its MCP sessions and its one-off requests).
 */
const chosen = new Map<string, LoggingLevel>();
/** What masks a line's secrets, per server (serveLogs). */
const masks = new WeakMap<McpServer, SecretsFilter | undefined>();

/** Whether a 2025-era client that chose `floor` (none: any) takes a line at `level`. */
const takes = (level: LoggingLevel, floor: LoggingLevel | undefined) =>
  floor === undefined || SEVERITY.indexOf(level) >= SEVERITY.indexOf(floor);

/** A tool call being handled: lines go to its client while it is open. */
interface Call {
  readonly server: McpServer;
  readonly ctx: ServerContext;
  open: boolean;
}

const calls = new AsyncLocalStorage<Call>();
/** Set while a line is handed to a client: a line said meanwhile (its failure) is not sent again. */
let sending = false;

/** Where a line ends: any line break a terminal or an editor takes for one. */
const LINE_BREAK = /[\r\n\u0085\u2028\u2029]/;
/** Control characters (an escape sequence's start among them), shown as `?`. */
const CONTROL = /\p{Cc}/gu;

/** What a client is shown of a line: its first line, secrets masked, then cut. */
function shown(message: string, secrets: SecretsFilter | undefined): string {
  const first = (message.split(LINE_BREAK, 1)[0] ?? '').replace(CONTROL, '?');
  // Masked whole before the cut: a cut through a secret would leave its start unrecognised.
  const masked = secrets ? secrets.redact(first) : first;
  return masked.length > MAX_CHARS ? `${masked.slice(0, MAX_CHARS)}…` : masked;
}

/**
 * At most BURST lines in a row, then PER_SECOND a second, to all clients together: lines are the
 * server's, but code can make it say some (a session's driver errors), and a client that stops
 * reading would hold every one in the server's memory. Dropped lines stay on stderr.
 */
const BURST = 50;
const PER_SECOND = 20;
let allowance = BURST;
let lastRefill = Date.now();

function allowed(): boolean {
  const now = Date.now();
  allowance = Math.min(BURST, allowance + ((now - lastRefill) / 1000) * PER_SECOND);
  lastRefill = now;
  if (allowance < 1) return false;
  allowance -= 1;
  return true;
}

/** Hand a line over unless one is being handed over already or too many were; a failed send is dropped. */
function handOver(send: () => Promise<unknown>): void {
  if (sending || !allowed()) return;
  sending = true;
  try {
    send().catch(() => {}); // a client gone meanwhile: stderr has the line
  } finally {
    sending = false;
  }
}

/** The line to the open call it was said in, at its era's level. */
function toCall(call: Call, level: LoggingLevel, message: string): void {
  // 2025-11-25: no envelope, the connection's chosen level; 2026-07-28: the SDK reads the request's.
  if (call.ctx.mcpReq.envelope === undefined && !takes(level, chosen.get(principalOf(call.ctx)))) return;
  handOver(() => call.ctx.mcpReq.log(level, shown(message, masks.get(call.server)), LOGGER));
}

let listening = false;

/**
 * The logging capability's half that is codexec's: `logging/setLevel` (the SDK's answer, and the
 * level kept for this connection's lines), and on stdio the lines said outside any call.
 */
export function serveLogs(server: McpServer, secrets: SecretsFilter | undefined): void {
  masks.set(server, secrets);
  // Its params checked here, so that an unknown level is invalid params (-32602), not an error.
  server.server.setRequestHandler(
    'logging/setLevel',
    { params: z.object({ level: z.enum(SEVERITY) }) },
    (params, ctx) => {
      chosen.set(principalOf(ctx), params.level);
      return {};
    },
  );
  if (!listening) {
    listening = true;
    onLog((level, message) => {
      const call = calls.getStore();
      if (call?.open) toCall(call, LEVELS[level], message);
    });
  }
  // One stdio server a process: its listener lives as long.
  if (!isStdio(server)) return;
  onLog((level, message) => {
    const floor = chosen.get(LOCAL_PRINCIPAL);
    const version = server.server.getNegotiatedProtocolVersion();
    if (calls.getStore()?.open || floor === undefined || version === undefined || version >= '2026') return;
    if (!takes(LEVELS[level], floor)) return;
    const data = shown(message, secrets);
    handOver(() => server.sendLoggingMessage({ level: LEVELS[level], logger: LOGGER, data }));
  });
}

/** Run `task` (a tool call's handling on `server`) so that the lines said meanwhile reach its client. */
export async function inCall<T>(server: McpServer, ctx: ServerContext, task: () => Promise<T>): Promise<T> {
  const call: Call = { server, ctx, open: true };
  try {
    return await calls.run(call, task);
  } finally {
    call.open = false; // work it started may go on, and say more: not to this call's client
  }
}
