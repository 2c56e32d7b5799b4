import type { McpServer } from '@modelcontextprotocol/server';
import { z } from 'zod';
import { defineTool } from '../define-tool.js';
import type { Services } from '../services.js';

export function registerPackageTools(server: McpServer, services: Services): void {
  defineTool(server, {
    name: 'install_package',
    title: 'Install a package',
    description:
      'Install one pip (language "python") or npm (language "node", also used by typescript) package. With ' +
      'session_id it goes into that session only; without, into the global environment every later run and ' +
      'session of that language can import from. Give a registry name with an optional version ' +
      '("pandas", "pandas>=2.0", "lodash@^4"); URLs, paths and options are refused. A failed install is a ' +
      'normal result with success=false and the installer output.',
    input: z.object({
      package: z.string().min(1).max(214).describe('Registry name, optionally with a version spec'),
      language: z.enum(['python', 'node']).describe('python (pip) or node (npm)'),
      session_id: z.string().min(1).max(64).optional().describe('Install into this session only'),
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
    }),
    annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: true },
    handler: (args) =>
      services.packages.install({
        language: args.language,
        package: args.package,
        sessionId: args.session_id,
      }),
  });
}
