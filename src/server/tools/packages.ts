import type { McpServer } from '@modelcontextprotocol/server';
import { z } from 'zod';
import { parsePackageSpec } from '../../packages/index.js';
import { egressField } from '../../results/index.js';
import { defineTool } from '../define-tool.js';
import type { Gatekeeper } from '../guard.js';
import type { Services } from '../services.js';
import { currentTaskRun } from '../tasks.js';
import { packageLanguages } from './languages.js';

const inputSchema = z.object({
  package: z.string().min(1).max(214).describe('Registry name, optionally with a version spec'),
  language: z.enum(['python', 'node']).describe('python (pip) or node (npm)'),
  session_id: z.string().min(1).max(64).optional().describe('Install into this session only'),
});

/** install_package runs installers (and their packages' scripts): only while CODEXEC_ENABLED. */
export function registerPackageTools(server: McpServer, services: Services, gate: Gatekeeper): void {
  const managers = packageLanguages(services.config);
  if (!services.config.gate.enabled || managers.length === 0) return;
  defineTool(server, {
    name: 'install_package',
    title: 'Install a package',
    description:
      'Install one pip (language "python") or npm (language "node", also used by typescript) package. With ' +
      'session_id it goes into that session only; without, into the global environment every later run and ' +
      'session of that language can import from. Give a registry name with an optional version ' +
      '("pandas", "pandas>=2.0", "lodash@^4"); URLs, paths and options are refused. A failed install is a ' +
      'normal result with success=false and the installer output.',
    input: inputSchema,
    advertisedInput: inputSchema.extend({
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
      ...egressField,
    }),
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
