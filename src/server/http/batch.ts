// MCP dropped JSON-RPC batching (2025-06-18): a JSON array POSTed to /mcp, in an MCP session or
// not, is refused as stdio refuses one (-32600 for each request in it, by its id) and nothing in
// it runs. The SDK's transport would still run a batch.
import { BATCH_REFUSED, classifyValue } from '../transport/index.js';

const OPEN_BRACKET = 0x5b;
const WHITESPACE = new Set([0x20, 0x09, 0x0a, 0x0d]);

/** The 400 answer to a body that is a JSON array; undefined for any other body. */
export function refuseBatch(body: Buffer | undefined): Response | undefined {
  if (!body || !opensArray(body)) return undefined;
  let value: unknown;
  try {
    value = JSON.parse(body.toString('utf8'));
  } catch {
    return undefined; // not JSON: the transport answers -32700
  }
  if (!Array.isArray(value)) return undefined;
  const verdict = classifyValue(value);
  const replies = verdict.kind === 'reply' ? verdict.replies : [];
  // An answer for each request in it, shaped as a batch's answer; one without an id for an empty
  // batch, or one of notifications and responses only (which stdio drops: HTTP must answer).
  const answer =
    value.length > 0 && replies.length > 0
      ? replies
      : (replies[0] ?? { jsonrpc: '2.0', id: null, error: { code: -32600, message: BATCH_REFUSED } });
  return Response.json(answer, { status: 400 });
}

function opensArray(body: Buffer): boolean {
  for (const byte of body) {
    if (byte === OPEN_BRACKET) return true;
    if (!WHITESPACE.has(byte)) return false;
  }
  return false;
}
