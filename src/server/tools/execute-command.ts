import type { McpServer } from '@modelcontextprotocol/server';
import { z } from 'zod';
import { commandResultSchema } from '../../results/index.js';
import { prepareCommand, runPreparedCommand } from '../command.js';
import { defineTool } from '../define-tool.js';
import { egressInput } from '../egress.js';
import { type Gatekeeper, runFacts } from '../guard.js';
import { withProgress } from '../progress.js';
import { artifactLinks } from '../resources.js';
import { savedHelp } from '../saved-output.js';
import type { Services } from '../services.js';
import { RUN_TEXT } from '../text.js';
import { advertisedArguments } from './arguments.js';

const DEFAULT_TIMEOUT_SECONDS = 60;

const inputSchema = z.object({
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
  ...egressInput,
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
    input: inputSchema,
    advertisedInput: advertisedArguments(
      inputSchema.extend({
        timeout: inputSchema.shape.timeout.describe(
          `Wall-clock limit in seconds (default ${DEFAULT_TIMEOUT_SECONDS}, at most ${services.config.maxTimeoutMs / 1000})`,
        ),
      }),
      services,
    ),
    output: commandResultSchema,
    text: RUN_TEXT,
    extraContent: artifactLinks,
    tasks: services.tasks,
    annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: true },
    handler: async (args, ctx) => {
      const prepared = await prepareCommand(services, {
        command: args.command,
        timeoutMs: Math.ceil((args.timeout ?? DEFAULT_TIMEOUT_SECONDS) * 1000),
        workDir: args.work_dir,
        allowedDomains: args.allowed_domains,
      });
      // Bad input (work_dir) is refused above, before anyone is asked; the gate applies the
      // rules and command lists (COMMAND_BLOCKED), approval and the audit entry.
      try {
        return await gate.run(
          ctx,
          { tool: 'execute_command', language: 'bash', code: args.command, sessionId: null },
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
