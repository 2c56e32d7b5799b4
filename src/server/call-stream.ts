// Where a 2025-era call's requests to its client go (its approval form, its code's llm.ask): on
// the call's own stream while the call is open, so a client that never opens the optional GET
// stream is asked too. Over stdio there is one stream, and the relation changes nothing.
import type { RequestId, ServerContext } from '@modelcontextprotocol/server';

/** Calls that have been answered (a result, or a task's handle): their stream is gone. */
const answered = new WeakSet<ServerContext>();

/** Run a tool call's handling; once it returns, its requests to the client go where unrelated ones go. */
export async function whileOpen<T>(ctx: ServerContext, work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } finally {
    answered.add(ctx);
  }
}

/**
 * The request options that send a request to the client on `ctx`'s stream while its call is open.
 * After (a 2025-era task runs on), the session's GET stream is the only way left to the client.
 */
export function onCallStream(ctx: ServerContext): { relatedRequestId?: RequestId } {
  return answered.has(ctx) ? {} : { relatedRequestId: ctx.mcpReq.id };
}
