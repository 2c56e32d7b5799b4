// run_script: a saved script run once, as execute_code runs code: in a fresh workspace, a host
// working_dir, execute_command's workspace (workspace: "command"), or sent to a session
// (session_id), where the agent put its data.
import type { McpServer, ServerContext } from '@modelcontextprotocol/server';
import { z } from 'zod';
import type { ExecutionRequest, ExecutionResult, RunOptions } from '../../engine/index.js';
import { CodexecError, InvalidInputError } from '../../errors/index.js';
import type { ScriptMetadata } from '../../library/index.js';
import { findMissingPackages } from '../../packages/index.js';
import { openCommandDir } from '../../policy/index.js';
import { executeCodeResultSchema } from '../../results/index.js';
import type { HeldDir } from '../../util/index.js';
import { discovers } from '../codemode.js';
import { defineTool } from '../define-tool.js';
import { egressInput } from '../egress.js';
import { type Gatekeeper, runFacts } from '../guard.js';
import { COMMAND_WORKSPACE, NEW_WORKSPACE, placeShown } from '../place.js';
import { withProgress } from '../progress.js';
import { runContent } from '../resources.js';
import { savedHelp } from '../saved-output.js';
import type { Services } from '../services.js';
import { sendAsRun } from '../session-run.js';
import { RUN_TEXT } from '../text.js';
import { advertisedArguments } from './arguments.js';
import { mine, scriptName, scriptOf } from './library.js';

const runScriptInput = () =>
  z.object({
    name: scriptName(),
    args: z.array(z.string().max(100_000)).max(1000).default([]),
    timeout_ms: z.number().int().positive().optional(),
    working_dir: z
      .string()
      .min(1)
      .optional()
      .describe('An existing directory beneath CODEXEC_ALLOWED_PATHS to run in. Default: a fresh workspace'),
    session_id: z.string().min(1).optional().describe('Run it in this session instead, as a send (no args)'),
    workspace: z.enum(['command']).optional().describe("Run it in execute_command's workspace"),
    ...egressInput(),
  });
type RunScriptArgs = z.output<ReturnType<typeof runScriptInput>>;

export function registerRunScript(server: McpServer, services: Services, gate: Gatekeeper): void {
  defineTool(server, {
    name: 'run_script',
    title: 'Run a saved script',
    description:
      'Run a saved script as execute_code would, args as its command-line arguments: in a fresh workspace, ' +
      'a session (session_id) or execute_command\'s workspace (workspace: "command"); refused, naming it, ' +
      `when a package it needs is not installed. ${savedHelp(services.config)}`,
    schemas: () => {
      const input = runScriptInput();
      return {
        input,
        advertisedInput: advertisedArguments(input, services),
        output: executeCodeResultSchema(),
      };
    },
    text: RUN_TEXT,
    tasks: services.tasks,
    extraContent: runContent,
    annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: true },
    handler: async (args, ctx) => {
      const places = (['working_dir', 'session_id', 'workspace'] as const).filter(
        (key) => args[key] !== undefined,
      );
      if (places.length > 1)
        throw new InvalidInputError(`give one of ${places.join(', ')}: where the script runs`);
      const scripts = mine(services);
      const saved = await scriptOf(scripts, args.name);
      if (args.session_id !== undefined) return sendScript(server, services, gate, saved, args, ctx);
      await refuseMissing(services, saved.metadata);
      const workingDir = await placeOf(services, args);
      const attempt = {
        tool: 'run_script',
        language: saved.metadata.language,
        code: saved.code,
        sessionId: null,
        place: placeShown(workingDir, args.workspace === 'command' ? COMMAND_WORKSPACE : NEW_WORKSPACE),
      };
      try {
        return await gate.run(
          ctx,
          attempt,
          () =>
            withProgress(ctx, async (options) => {
              const result = await runSaved(services, saved, args, options, {
                workingDir,
                askEgress: gate.egressAsker(ctx, 'run_script', null),
              });
              await scripts.recordRun(args.name, result.success);
              return result;
            }),
          runFacts,
        );
      } finally {
        workingDir?.close();
      }
    },
  });
}

/** Where a one-shot run of the script works: a host directory, execute_command's workspace, or its own. */
async function placeOf(services: Services, args: RunScriptArgs): Promise<HeldDir | undefined> {
  if (args.working_dir !== undefined) return services.hostDirs.open(args.working_dir, 'working_dir');
  if (args.workspace === 'command') return openCommandDir(undefined, services.config, services.hostDirs);
  return undefined;
}

/** A package the script lists that the global environment lacks: refused before anything runs. */
async function refuseMissing(services: Services, metadata: ScriptMetadata): Promise<void> {
  const missing = await findMissingPackages(metadata.language, metadata.packages, services.packageCheck);
  if (missing.length === 0) return;
  const tool = metadata.language === 'python' ? 'python' : 'node';
  throw new CodexecError(
    'PACKAGES_MISSING',
    `script ${metadata.name} needs packages that are not installed: ${missing.join(', ')}. Install them first ` +
      `with install_package (language "${tool}", no session_id), then run it again.`,
  );
}

/**
 * run_script {session_id}: the script's code sent to that session, as send_to_session sends code
 * (its workspace, its state, its packages), answered in execute_code's shape.
 */
function sendScript(
  server: McpServer,
  services: Services,
  gate: Gatekeeper,
  { metadata, code }: { metadata: ScriptMetadata; code: string },
  args: RunScriptArgs,
  ctx: ServerContext,
) {
  const sessionId = args.session_id as string;
  // The session's network was fixed when it started: a narrower list here would be ignored.
  if (args.allowed_domains !== undefined)
    throw new InvalidInputError(
      "allowed_domains cannot be given with session_id: a session's are set by start_session",
    );
  if (args.args.length > 0)
    throw new InvalidInputError(
      'args need a process of their own: run it without session_id, or in workspace "command"',
    );
  return sendAsRun(server, services, gate, ctx, {
    tool: 'run_script',
    sessionId,
    language: metadata.language,
    code,
    timeoutMs: args.timeout_ms,
    otherLanguage: (runs) =>
      `script ${metadata.name} is ${metadata.language}; session ${sessionId} runs ${runs}`,
    after: (sent) => mine(services).recordRun(metadata.name, sent.success),
  });
}

/** One run of a saved script through the engine, with code mode's discovery where it applies. */
async function runSaved(
  services: Services,
  { metadata, code }: { metadata: ScriptMetadata; code: string },
  args: RunScriptArgs,
  options: RunOptions,
  { workingDir, askEgress }: Pick<ExecutionRequest, 'workingDir' | 'askEgress'>,
): Promise<ExecutionResult> {
  // Code mode's discovery, where downstream servers are configured (no call allowed).
  const ended = new AbortController();
  const bridge = discovers(services, metadata.language)
    ? services.bridge.openRun({ allowedTools: [], signal: ended.signal })
    : undefined;
  try {
    return await services.engine.run(
      {
        language: metadata.language,
        code,
        timeoutMs: args.timeout_ms,
        workingDir,
        args: args.args,
        scriptName: metadata.name,
        allowedDomains: args.allowed_domains,
        askEgress,
        bridge,
      },
      options,
    );
  } finally {
    ended.abort(new Error('the run ended'));
  }
}
