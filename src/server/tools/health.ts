import type { McpServer } from '@modelcontextprotocol/server';
import { z } from 'zod';
import { currentPrincipal } from '../../util/index.js';
import { defineTool } from '../define-tool.js';
import type { Services } from '../services.js';

const startedAt = Date.now();

const output = () =>
  z.object({
    status: z.literal('ok'),
    uptime_s: z.number().describe('seconds since this server started'),
    sandbox_mode: z.string().describe('the sandbox mode runs use (auto as it resolved)'),
    pool: z.object({
      size: z.number().describe('CODEXEC_POOL_SIZE: warm processes kept per language in use'),
      ready: z.record(z.string(), z.number()).describe('warm processes waiting now, per interpreter'),
    }),
    sessions: z.number().describe('REPL sessions running (of this principal over serve --http)'),
    runs: z
      .object({
        running: z.number().describe('runs holding a slot now, all principals together'),
        queued: z.number().describe('calls waiting for a slot'),
        max: z.number().describe('CODEXEC_MAX_CONCURRENT_RUNS'),
      })
      .describe('the server-wide run slots'),
    mounts: z
      .array(z.object({ source: z.string(), target: z.string() }))
      .describe("CODEXEC_MOUNTS: the operator's directories your code reads (read-only) at target"),
    pending_approvals: z.number().describe('runs waiting for an approval answer, all principals together'),
    downstream: z
      .array(
        z.object({
          name: z.string(),
          transport: z.enum(['stdio', 'http']),
          connected: z.boolean(),
          circuit: z.enum(['closed', 'open', 'half-open']),
          tools: z.number().nullable().describe('tools listed; null until first used'),
          error: z.string().optional(),
        }),
      )
      .describe('code mode: the MCP servers of CODEXEC_MCP_CONFIG'),
  });

/** `health`: what this server is running, for an agent or an operator to check before relying on it. */
export function registerHealthTool(server: McpServer, services: Services): void {
  defineTool(server, {
    name: 'health',
    title: 'Server health',
    description:
      'Report uptime, the warm pool, running sessions, busy run slots, the directories mounted for your code and ' +
      'the downstream MCP servers of code mode (connected, tool count). Read-only.',
    compactDescription: 'Uptime, warm pool, sessions and the downstream MCP servers (connected, tools).',
    schemas: () => ({ input: z.object({}), output: output() }),
    annotations: { readOnlyHint: true, openWorldHint: false },
    handler: () => healthReport(services),
  });
}

/** What `health` reports (the dashboard's health view shows the same). */
export async function healthReport(services: Services): Promise<z.output<ReturnType<typeof output>>> {
  return {
    status: 'ok' as const,
    uptime_s: Math.round((Date.now() - startedAt) / 1000),
    sandbox_mode: await services.engine.sandboxMode(),
    pool: services.engine.poolStatus(),
    sessions: (await services.sessions.list()).sessions.length,
    runs: services.slots.status(),
    mounts: services.mounts?.list(currentPrincipal()) ?? [],
    pending_approvals: services.pendingApprovals.count,
    downstream: services.bridge.health(),
  };
}
