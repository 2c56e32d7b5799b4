import type { McpServer } from '@modelcontextprotocol/server';
import { z } from 'zod';
import { InvalidInputError } from '../../errors/index.js';
import { commandResultSchema } from '../../results/index.js';
import { prepareCommand, runPreparedCommand } from '../command.js';
import { defineTool } from '../define-tool.js';
import { egressInput } from '../egress.js';
import { type Gatekeeper, runFacts } from '../guard.js';
import { COMMAND_WORKSPACE, placeShown } from '../place.js';
import { withProgress } from '../progress.js';
import { artifactLinks } from '../resources.js';
import { savedHelp } from '../saved-output.js';
import type { Services } from '../services.js';
import { RUN_TEXT } from '../text.js';
import { advertisedArguments } from './arguments.js';

const DEFAULT_TIMEOUT_SECONDS = 60;

const inputSchema = () =>
  z.object({
    command: z
      .string()
      .min(1, 'command must not be empty')
      .describe('Run by bash -c: pipes, && and redirections work'),
    timeout: z
      .number()
      .positive()
      .optional()
      .describe(
        `Wall-clock limit in seconds (default ${DEFAULT_TIMEOUT_SECONDS}; clamped to the server maximum)`,
      ),
    work_dir: z
      .string()
      .optional()
      .describe(
        'Directory to run in: relative to the persistent workspace (default: the workspace itself), or an ' +
          'absolute one beneath CODEXEC_ALLOWED_PATHS (run as its owner)',
      ),
    ...egressInput(),
  });
/**
 * What is parsed: the advertised fields (MassGen's names), and `working_dir`, the other run tools'
 * name for work_dir, accepted too. Also `timeout_ms`, for the same reason.
 */
const parsedInput = (advertised: ReturnType<typeof inputSchema>) =>
  advertised.extend({
    working_dir: z.string().optional(),
    timeout_ms: z.number().int().positive().optional(),
  });

export function registerExecuteCommand(server: McpServer, services: Services, gate: Gatekeeper): void {
  defineTool(server, {
    name: 'execute_command',
    title: 'Run a command line',
    description:
      'Run a command line (bash -c) in a persistent sandboxed workspace whose files survive between calls: ' +
      'tests ("pytest tests/ -v"), builds, scripts, file operations. A .venv in work_dir is activated. No ' +
      'server secrets; no network unless the server allows it; background processes end with the call (use ' +
      `start_process in a session for what must keep running). ${savedHelp(services.config)} A failing ` +
      'command is a normal result with success=false: read stderr. Blocked commands are refused ' +
      '(COMMAND_BLOCKED). For a program you have as text, execute_code is simpler.',
    schemas: () => {
      const input = inputSchema();
      return {
        input: parsedInput(input),
        advertisedInput: advertisedArguments(
          input.extend({
            timeout: input.shape.timeout.describe(
              `Wall-clock limit in seconds (default ${DEFAULT_TIMEOUT_SECONDS}, at most ${services.config.maxTimeoutMs / 1000})`,
            ),
          }),
          services,
        ),
        output: commandResultSchema(),
      };
    },
    text: RUN_TEXT,
    extraContent: artifactLinks,
    tasks: services.tasks,
    annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: true },
    handler: async (args, ctx) => {
      const prepared = await prepareCommand(services, {
        command: args.command,
        timeoutMs: timeoutOf(args),
        workDir: workDirOf(args),
        allowedDomains: args.allowed_domains,
      });
      // Bad input (work_dir) is refused above, before anyone is asked; the gate applies the
      // rules and command lists (COMMAND_BLOCKED), approval and the audit entry.
      try {
        return await gate.run(
          ctx,
          {
            tool: 'execute_command',
            language: 'bash',
            code: args.command,
            sessionId: null,
            place: placeShown(prepared.dir, COMMAND_WORKSPACE),
          },
          () =>
            withProgress(ctx, (options) =>
              runPreparedCommand(services, prepared, options, gate.egressAsker(ctx, 'execute_command', null)),
            ),
          runFacts,
        );
      } finally {
        prepared.dir.close(); // refused, denied or done: the directory is no longer held
      }
    },
  });
}

/** work_dir, or working_dir under the other tools' name; both, unless equal, are refused. */
function workDirOf(args: { work_dir?: string | undefined; working_dir?: string | undefined }) {
  if (args.work_dir !== undefined && args.working_dir !== undefined && args.work_dir !== args.working_dir)
    throw new InvalidInputError('work_dir and working_dir name the same thing: give one');
  return args.work_dir ?? args.working_dir;
}

/** timeout in seconds, or timeout_ms under the other tools' name; not both. */
function timeoutOf(args: { timeout?: number | undefined; timeout_ms?: number | undefined }) {
  if (args.timeout !== undefined && args.timeout_ms !== undefined)
    throw new InvalidInputError('timeout (seconds) and timeout_ms name the same thing: give one');
  return args.timeout_ms ?? Math.ceil((args.timeout ?? DEFAULT_TIMEOUT_SECONDS) * 1000);
}
