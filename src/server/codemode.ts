import type { McpServer, ServerContext } from '@modelcontextprotocol/server';
import { z } from 'zod';
import { isModernRequest, SESSIONLESS } from '../approvals/index.js';
import type { BridgeRun } from '../bridge/index.js';
import { type AskModel, createSampler, type Sampler } from '../codemode/index.js';
import { onCallStream } from './call-stream.js';
import type { Services } from './services.js';

/** The code-mode inputs of a tool that runs code: which other MCP servers' tools its code may call. */
export const codeModeInput = () => ({
  allowed_tools: z
    .array(z.string().min(1).max(512))
    .max(200)
    .optional()
    .describe(
      'Code mode (python, node, typescript): downstream MCP tools the code may call, mcp__<server>__<tool>, ' +
        '* wildcards (default: none). Every run has discoverMCPTools/searchTools/getToolSchema and callMCPTool ' +
        '(python: await discover_mcp_tools(), await call_mcp_tool(name, args), …); a call outside this list raises',
    ),
  enable_sampling: z
    .boolean()
    .default(false)
    .describe(
      "Code mode: llm.ask(prompt) / llm.think({messages, systemPrompt?, maxTokens?}) ask the client's model",
    ),
  max_sampling_rounds: z
    .number()
    .int()
    .min(1)
    .max(100)
    .default(10)
    .describe('llm.* calls allowed in the run'),
  max_sampling_tokens: z
    .number()
    .int()
    .min(1)
    .max(1_000_000)
    .default(10_000)
    .describe('tokens the llm.* calls may ask for in all'),
});

type CodeModeArgs = z.output<z.ZodObject<ReturnType<typeof codeModeInput>>>;

/**
 * A tool's advertised input without `allowed_tools` when no downstream server is configured (there
 * is no tool to allow); the sampling fields stay, since the client's model answers those.
 */
export function advertisedCodeMode(
  schema: z.ZodObject,
  services: { readonly bridge: { readonly configured: boolean } },
): z.ZodObject {
  return services.bridge.configured ? schema : schema.omit({ allowed_tools: true } as never);
}

/**
 * The run's view of the bridge and its sampler: when the call asked for code mode, or, for
 * discovery, whenever downstream servers are configured (python, node, typescript); undefined
 * otherwise (no socket, no helpers). Both end with `signal`.
 */
export function codeModeFor(
  server: McpServer,
  services: Services,
  args: CodeModeArgs & { readonly language: string },
  ctx: ServerContext,
  signal: AbortSignal,
): { readonly bridge?: BridgeRun; readonly sampler?: Sampler } {
  const explicit = args.allowed_tools !== undefined || args.enable_sampling;
  if (!explicit && !discovers(services, args.language)) return {};
  const bridge = services.bridge.openRun({ allowedTools: args.allowed_tools ?? [], explicit, signal });
  if (!args.enable_sampling) return { bridge };
  const limits = { rounds: args.max_sampling_rounds, tokens: args.max_sampling_tokens };
  const sampler = createSampler(askModel(ctx), limits, services.secrets, samplingUnavailable(server, ctx));
  return { bridge, sampler };
}

/** Whether a run in `language` gets discovery without asking: downstream servers are configured. */
export function discovers(services: Services, language: string): boolean {
  return services.bridge.configured && language !== 'bash';
}

/** The sampler of one send to a session started with enable_sampling (undefined: it was not). */
export function sessionSampler(
  server: McpServer,
  services: Services,
  sessionId: string,
  ctx: ServerContext,
): Sampler | undefined {
  const sampling = services.sessions.samplingOf(sessionId);
  if (!sampling) return undefined;
  return createSampler(
    askModel(ctx),
    sampling.limits,
    services.secrets,
    samplingUnavailable(server, ctx),
    sampling.used,
  );
}

/** What a code-mode run may do beyond running its code, for the approval form; undefined: nothing. */
export function codeModePowers(
  args: Pick<CodeModeArgs, 'allowed_tools' | 'enable_sampling'>,
): string | undefined {
  const powers = [
    ...(args.allowed_tools?.length ? [`call the MCP tools ${args.allowed_tools.join(', ')}`] : []),
    ...(args.enable_sampling ? ["ask the client's model (llm.ask / llm.think)"] : []),
  ];
  return powers.length > 0 ? powers.join('; ') : undefined;
}

/** The client's model, asked on the call's stream while the call is open (call-stream.ts). */
function askModel(ctx: ServerContext): AskModel {
  return (params) => ctx.mcpReq.requestSampling(params, { signal: ctx.mcpReq.signal, ...onCallStream(ctx) });
}

/** Why the client's model cannot be asked during this call, or undefined when it can. */
function samplingUnavailable(server: McpServer, ctx: ServerContext): string | undefined {
  if (isModernRequest(server, ctx)) {
    return "MCP 2026-07-28 gives a server no way to ask the client's model while a call runs (a 2025-era connection can)";
  }
  const capabilities = server.server.getClientCapabilities();
  if (ctx.http && !capabilities)
    return `${SESSIONLESS}: its model cannot be asked (a client that initializes and sends back the Mcp-Session-Id it gets can be)`;
  if (!capabilities?.sampling) return 'the client declared no sampling capability';
  return undefined;
}
