import type { McpServer } from '@modelcontextprotocol/server';
import { z } from 'zod';
import { parsePackageSpec } from '../../packages/index.js';
import { egressField } from '../../results/index.js';
import { defineTool } from '../define-tool.js';
import type { Gatekeeper } from '../guard.js';
import type { Services } from '../services.js';
import { currentTaskRun } from '../tasks.js';
import { packageLanguages } from './languages.js';

const inputSchema = () =>
  z.object({
    package: z.string().min(1).max(214),
    language: z.enum(['python', 'node']).describe('python (pip) or node (npm)'),
    session_id: z.string().min(1).max(64).optional(),
  });

/** install_package runs installers (and their packages' scripts): only while CODEXEC_ENABLED. */
export function registerPackageTools(server: McpServer, services: Services, gate: Gatekeeper): void {
  const managers = packageLanguages(services.config);
  if (!services.config.gate.enabled || managers.length === 0) return;
  defineTool(server, {
    name: 'install_package',
    title: 'Install a package',
    description:
      'Install a pip (python) or npm (node, also for typescript) package: into one session with session_id, ' +
      'else for every later run and session of that language. A registry name with an optional version ' +
      '("pandas>=2.0", "lodash@^4"); no URLs, paths or options. A python package is checked by importing ' +
      'it. A failure is a normal result with success=false and the installer output.',
    schemas: () => {
      const input = inputSchema();
      return {
        input,
        advertisedInput: input.extend({
          language: z.enum(managers as ['python' | 'node']).describe('python (pip) or node (npm)'),
        }),
        output: z.object({
          success: z.boolean(),
          package: z.string(),
          version: z.string().nullable().describe('the version actually installed'),
          install_output: z.string(),
          language: z.enum(['python', 'node']),
          session_id: z.string().nullable(),
          exit_code: z.number().int().nullable(),
          timed_out: z.boolean(),
          duration_ms: z.number().int(),
          ...egressField(),
        }),
      };
    },
    text: { plain: ['install_output'], quiet: ['language', 'duration_ms'], shown: installText },
    annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: true },
    tasks: services.tasks,
    handler: async (args, ctx) => {
      // Refuse a bad spec or an unknown session before anyone is asked to approve it.
      parsePackageSpec(args.language, args.package, services.config.packageBlocklist);
      if (args.session_id) services.sessions.describe(args.session_id);
      const attempt = {
        tool: 'install_package',
        language: args.language,
        code: args.package,
        sessionId: args.session_id ?? null,
        runtimes: args.language === 'node' ? ['node', 'typescript'] : ['python'],
      };
      return gate.run(
        ctx,
        attempt,
        () =>
          services.packages.install({
            language: args.language,
            package: args.package,
            sessionId: args.session_id,
            // tasks/cancel (or the client's cancellation of a plain call) stops the installer.
            signal: currentTaskRun()?.signal ?? ctx.mcpReq.signal,
          }),
        (result) => ({
          execution_id: null,
          exit_code: result.exit_code,
          duration_ms: result.duration_ms,
          stdout: result.install_output,
        }),
      );
    },
  });
}

/**
 * A successful install reads as the installer's one line that says what it installed (pip's
 * "Successfully installed …", npm's "added N packages …"); a failed one keeps all of its output.
 */
function installText(value: Record<string, unknown>): Record<string, unknown> {
  const output = typeof value.install_output === 'string' ? value.install_output : '';
  if (value.success !== true) return value;
  const lines = output
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '');
  const said = lines.findLast((line) => /^(Successfully installed |added \d+ package|up to date)/.test(line));
  return { ...value, install_output: said ?? lines.at(-1) ?? '' };
}
