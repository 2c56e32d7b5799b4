import type { McpServer } from '@modelcontextprotocol/server';
import { z } from 'zod';
import type { ExecutionRequest } from '../../engine/index.js';
import { InvalidInputError } from '../../errors/index.js';
import { executeCodeResultSchema } from '../../results/index.js';
import { codeModeFor, codeModeInput, codeModePowers } from '../codemode.js';
import { defineTool } from '../define-tool.js';
import { egressInput } from '../egress.js';
import { type Gatekeeper, runFacts } from '../guard.js';
import { NEW_WORKSPACE, placeShown } from '../place.js';
import { withProgress } from '../progress.js';
import { runContent } from '../resources.js';
import { savedHelp } from '../saved-output.js';
import type { Services } from '../services.js';
import { sendAsRun } from '../session-run.js';
import { RUN_TEXT } from '../text.js';
import { advertisedArguments } from './arguments.js';
import { advertisedLanguage, languageInput } from './languages.js';

const LANGUAGE_HELP = 'node runs JavaScript (ES module)';
const inputSchema = () =>
  z.object({
    language: languageInput().describe(LANGUAGE_HELP),
    code: z.string().min(1, 'code must not be empty').describe('The whole program'),
    timeout_ms: z
      .number()
      .int()
      .positive()
      .optional()
      .describe('Wall-clock limit in ms (default 30000; clamped to the server maximum)'),
    working_dir: z
      .string()
      .min(1)
      .optional()
      .describe(
        'An existing directory beneath CODEXEC_ALLOWED_PATHS to run in. Default: a fresh empty workspace',
      ),
    session_id: z
      .string()
      .min(1)
      .max(200)
      .optional()
      .describe('Run it in this session instead (as send_to_session)'),
    ...codeModeInput(),
    ...egressInput(),
  });

/** What the audit keeps of an execution result. */
export function registerExecuteCode(server: McpServer, services: Services, gate: Gatekeeper): void {
  defineTool(server, {
    name: 'execute_code',
    title: 'Run code',
    description:
      'Run a Python, JavaScript (node), TypeScript or Bash program once, in a fresh sandboxed process with no ' +
      'state from earlier calls; returns stdout, stderr, exit code and the files it wrote. For work that keeps ' +
      'variables between calls, use a session. Only printed output comes back; matplotlib figures and image ' +
      `files come back as images. ${savedHelp(services.config)} No server secrets reach the code. A failing ` +
      'program is a normal result with success=false: read stderr and fix the code.',
    compactDescription:
      'Run a Python, JavaScript (node), TypeScript or Bash program once in a sandbox; returns stdout, stderr, ' +
      "exit code, files. The code can find other MCP servers' tools (discoverMCPTools, searchTools, " +
      'getToolSchema) and call those in allowed_tools (callMCPTool; python: await call_mcp_tool, …).',
    schemas: () => {
      const input = inputSchema();
      return {
        input,
        advertisedInput: advertisedArguments(
          input.extend({ language: advertisedLanguage(services.config, LANGUAGE_HELP) }),
          services,
        ),
        // Alone (codemode), without sessions to name nor aliases to list; its point is allowed_tools.
        compactInput: advertisedArguments(
          input
            .omit({ session_id: true })
            .extend({ language: advertisedLanguage(services.config, LANGUAGE_HELP, false) }),
          { ...services, bridge: { configured: true } },
        ),
        output: executeCodeResultSchema(),
      };
    },
    text: RUN_TEXT,
    extraContent: runContent,
    tasks: services.tasks,
    annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: true },
    handler: async (args, ctx) => {
      if (args.session_id !== undefined) return sendInSession(server, services, gate, args, ctx);
      // Bad input is refused before anyone is asked to approve it.
      const workingDir = args.working_dir
        ? services.hostDirs.open(args.working_dir, 'working_dir')
        : undefined;
      try {
        return await gate.run(
          ctx,
          {
            tool: 'execute_code',
            language: args.language,
            code: args.code,
            sessionId: null,
            powers: codeModePowers(args),
            place: placeShown(workingDir, NEW_WORKSPACE),
          },
          () =>
            runWithProgress(server, services, args, ctx, {
              workingDir,
              askEgress: gate.egressAsker(ctx, 'execute_code', null),
            }),
          runFacts,
        );
      } finally {
        workingDir?.close();
      }
    },
  });
}

/**
 * `execute_code {session_id}`, so one tool serves both kinds of run: the code goes to that session as send_to_session would
 * send it, and the result is execute_code's shape with the session's fields beside it.
 */
async function sendInSession(
  server: McpServer,
  services: Services,
  gate: Gatekeeper,
  args: z.output<ReturnType<typeof inputSchema>>,
  ctx: Parameters<Parameters<typeof defineTool>[1]['handler']>[1],
) {
  const sessionId = args.session_id as string;
  // What a session fixed when it started cannot be changed by one of its sends.
  const fixed = [
    ...(['working_dir', 'allowed_tools', 'allowed_domains'] as const).filter(
      (name) => args[name] !== undefined,
    ),
    ...(args.enable_sampling ? ['enable_sampling'] : []),
  ];
  if (fixed.length > 0)
    throw new InvalidInputError(
      `${fixed.join(', ')} cannot be given with session_id: a session's are set by start_session`,
    );
  return sendAsRun(server, services, gate, ctx, {
    tool: 'execute_code',
    sessionId,
    language: args.language,
    code: args.code,
    timeoutMs: args.timeout_ms,
    otherLanguage: (runs) => `session ${sessionId} runs ${runs}, not ${args.language}`,
  });
}

async function runWithProgress(
  server: McpServer,
  services: Services,
  args: z.output<ReturnType<typeof inputSchema>>,
  ctx: Parameters<Parameters<typeof defineTool>[1]['handler']>[1],
  { workingDir, askEgress }: Pick<ExecutionRequest, 'workingDir' | 'askEgress'>,
) {
  // Code mode: the run's view of the bridge and its sampler, ended (pending calls refused) with it.
  const ended = new AbortController();
  const codeMode = codeModeFor(server, services, args, ctx, ended.signal);
  try {
    return await withProgress(ctx, (options) =>
      services.engine.run(
        {
          language: args.language,
          code: args.code,
          timeoutMs: args.timeout_ms,
          workingDir,
          allowedDomains: args.allowed_domains,
          askEgress,
          ...codeMode,
        },
        options,
      ),
    );
  } finally {
    // With a reason of its own: abort() would make a DOMException, and its stack, for each run
    // (~0.07 ms of the result's path, profiled).
    ended.abort(RUN_ENDED);
  }
}

const RUN_ENDED = new Error('the run ended');
