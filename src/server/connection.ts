// What a server instance knows of the connection it serves: who each request acts for, and
// whether it is a stdio server's one connection (the only one a server can reach outside a call).
import type { McpServer, ServerContext } from '@modelcontextprotocol/server';
import { LOCAL_PRINCIPAL } from '../util/index.js';

/** Who a request acts for: serve --http passes the bearer token's principal as the client id. */
export function principalOf(ctx: ServerContext): string {
  return ctx.http?.authInfo?.clientId || LOCAL_PRINCIPAL;
}

const stdioServers = new WeakSet<McpServer>();

/** `server` serves a stdio server's one connection (createServer). */
export function markStdio(server: McpServer): void {
  stdioServers.add(server);
}

/**
 * Whether `server` may tell its client something outside any call (a log line, a task's status):
 * over HTTP nothing is sent outside a call, an MCP session's GET stream included.
 */
export function isStdio(server: McpServer): boolean {
  return stdioServers.has(server);
}
