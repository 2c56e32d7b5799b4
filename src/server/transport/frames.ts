// Every frame a client sends gets the answer JSON-RPC 2.0 gives it. Valid messages pass on to
// the SDK; the ones the SDK would drop without a word (it skips what is not JSON and discards
// what fails its schema, leaving the client to wait forever) are answered here. Pure: shared by
// every transport (stdio today; HTTP can classify a parsed body with `classifyValue`).
import {
  isJSONRPCErrorResponse,
  isJSONRPCNotification,
  isJSONRPCRequest,
  isJSONRPCResultResponse,
  type JSONRPCMessage,
  ProtocolErrorCode,
} from '@modelcontextprotocol/server';
import { readHead, readTailId, type Scalar } from './ends.js';

export type ReplyId = string | number | null;

/** A JSON-RPC error response written by the transport itself (`id` null when unreadable). */
export interface ErrorReply {
  readonly jsonrpc: '2.0';
  readonly id: ReplyId;
  readonly error: { readonly code: number; readonly message: string; readonly data?: unknown };
}

/** What to do with one frame; `why` is the stderr line for anything not passed on. */
export type Verdict =
  | { readonly kind: 'deliver'; readonly message: JSONRPCMessage }
  | { readonly kind: 'reply'; readonly replies: readonly ErrorReply[]; readonly why: string }
  | { readonly kind: 'drop'; readonly why: string }
  | { readonly kind: 'ignore' };

const MEMBERS = new Set(['jsonrpc', 'id', 'method', 'params', 'result', 'error']);

/** One frame's text (a line, without its newline). Blank lines are framing slack, not messages. */
export function classifyText(text: string): Verdict {
  if (/^\s*$/.test(text)) return { kind: 'ignore' };
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    const detail = (error as Error).message.slice(0, 200);
    return reply(
      null,
      ProtocolErrorCode.ParseError,
      `Parse error: the message is not valid JSON (${detail})`,
    );
  }
  return classifyValue(value);
}

/** One parsed JSON value. */
export function classifyValue(value: unknown): Verdict {
  if (Array.isArray(value)) return classifyBatch(value);
  if (!isPlainObject(value)) {
    return reply(
      null,
      ProtocolErrorCode.InvalidRequest,
      'Invalid request: a JSON-RPC message must be an object',
    );
  }
  if (
    isJSONRPCRequest(value) ||
    isJSONRPCNotification(value) ||
    isJSONRPCResultResponse(value) ||
    isJSONRPCErrorResponse(value)
  ) {
    return { kind: 'deliver', message: value as JSONRPCMessage };
  }
  const id = readableId(value);
  const isResponse = ('result' in value || 'error' in value) && !('method' in value);
  if (isResponse) return failedResponse(id, 'a response that is not valid JSON-RPC');
  const problem = requestProblem(value);
  if (!('id' in value)) {
    const method = typeof value.method === 'string' ? ` (${value.method.slice(0, 80)})` : '';
    return { kind: 'drop', why: `dropped a message${method} with no id: ${problem.message}` };
  }
  const label = problem.code === ProtocolErrorCode.InvalidParams ? 'Invalid params' : 'Invalid request';
  return reply(id ?? null, problem.code, `${label}: ${problem.message}`);
}

/**
 * A frame over the size limit, of which only the ends were kept. Its id is read from the head
 * (`{"jsonrpc":"2.0","id":…` order) or the tail (the SDK client writes `id` last).
 */
export function classifyOversize(head: string, tail: string, bytes: number, limit: number): Verdict {
  const members = readHead(head);
  const id = members.scalars.get('id') ?? readTailId(tail);
  const size = `a message of ${bytes} bytes is over the ${limit}-byte limit (CODEXEC_MAX_MESSAGE_BYTES)`;
  if ((members.names.has('result') || members.names.has('error')) && !members.names.has('method')) {
    return failedResponse(id, `a response: ${size}`);
  }
  if (id === undefined) {
    return { kind: 'drop', why: `dropped ${size}; no id could be read from its ends` };
  }
  return reply(id, ProtocolErrorCode.InvalidRequest, `Request too large: ${size}`, { bytes, limit });
}

function classifyBatch(items: unknown[]): Verdict {
  if (items.length === 0) {
    return reply(null, ProtocolErrorCode.InvalidRequest, 'Invalid request: an empty batch');
  }
  // MCP dropped JSON-RPC batching (2025-06-18); every request in one is refused by its own id,
  // one response per line, which is what an MCP client can read.
  const replies: ErrorReply[] = [];
  for (const item of items) {
    if (!isPlainObject(item) || !('method' in item)) continue;
    const id = readableId(item);
    if (id !== undefined) replies.push(errorReply(id, ProtocolErrorCode.InvalidRequest, BATCH_REFUSED));
  }
  const why = `refused a batch of ${items.length} (${replies.length} requests answered)`;
  return replies.length > 0 ? { kind: 'reply', replies, why } : { kind: 'drop', why };
}

export const BATCH_REFUSED =
  'Invalid request: JSON-RPC batches are not supported (MCP dropped them); send each message on its own';

/** Why a message with a method fails the SDK's request shape, most basic reason first. */
function requestProblem(value: Record<string, unknown>): { code: number; message: string } {
  const invalid = (message: string) => ({ code: ProtocolErrorCode.InvalidRequest, message });
  const params = (message: string) => ({ code: ProtocolErrorCode.InvalidParams, message });
  if (value.jsonrpc !== '2.0') return invalid('"jsonrpc" must be "2.0"');
  if (!('method' in value)) return invalid('a request needs a "method"');
  if (typeof value.method !== 'string') return invalid('"method" must be a string');
  if ('result' in value || 'error' in value) {
    return invalid('a message cannot carry both "method" and "result" or "error"');
  }
  if ('id' in value && !Number.isSafeInteger(value.id) && typeof value.id !== 'string') {
    return invalid('"id" must be a string or an integer');
  }
  const extra = Object.keys(value).filter((key) => !MEMBERS.has(key));
  if (extra.length > 0) return invalid(`unexpected member(s) ${extra.slice(0, 5).join(', ')}`);
  if (!isPlainObject(value.params)) {
    return params('"params" must be an object (MCP uses named parameters)');
  }
  return params('"params" does not have the MCP request shape (check "_meta")');
}

/**
 * A response the SDK cannot take (malformed, or too large): with a usable id the server's own
 * request gets it as an error, so it fails now instead of at its timeout; else a stderr line.
 */
function failedResponse(id: Scalar | undefined, what: string): Verdict {
  if (!Number.isSafeInteger(id) && typeof id !== 'string') return { kind: 'drop', why: `dropped ${what}` };
  const message: JSONRPCMessage = {
    jsonrpc: '2.0',
    id: id as string | number,
    error: { code: ProtocolErrorCode.InvalidRequest, message: `The client sent ${what}` },
  };
  return { kind: 'deliver', message };
}

function reply(id: ReplyId, code: number, message: string, data?: unknown): Verdict {
  return { kind: 'reply', replies: [errorReply(id, code, message, data)], why: message };
}

function errorReply(id: ReplyId, code: number, message: string, data?: unknown): ErrorReply {
  return { jsonrpc: '2.0', id, error: { code, message, ...(data !== undefined && { data }) } };
}

/** A string or finite number id is echoed back; anything else is unreadable (JSON-RPC: null). */
function readableId(value: Record<string, unknown>): Scalar | undefined {
  const { id } = value;
  return typeof id === 'string' || (typeof id === 'number' && Number.isFinite(id)) ? id : undefined;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
