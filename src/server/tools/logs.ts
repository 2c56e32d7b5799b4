import type { McpServer } from '@modelcontextprotocol/server';
import { z } from 'zod';
import {
  networkConnectionSchema,
  STATUSES,
  searchFiltersSchema,
  toolCallCountSchema,
  toolCallSchema,
} from '../../logs/index.js';
import { artifactsOmitted } from '../../results/index.js';
import { currentPrincipal } from '../../util/index.js';
import { defineTool } from '../define-tool.js';
import type { Services } from '../services.js';

const status = () =>
  z.enum(STATUSES).describe('success (exit 0), failed (error, non-zero exit, cancelled) or timeout');

const resultSchema = () =>
  z.object({
    execution_id: z.string(),
    session_id: z.string().nullable().describe('the session it ran in; null for a one-shot run'),
    language: z.string().nullable(),
    code_preview: z.string().describe('first 200 characters of the code'),
    status: status(),
    exit_code: z.number().int().nullable(),
    error_preview: z.string().nullable().describe('last line of stderr of a failed run; null on success'),
    duration_ms: z.number(),
    executed_at: z.string().describe('ISO time the run started'),
    script_name: z.string().nullable().describe('the saved script this run executed, if any'),
  });

const searchOutput = () =>
  z.object({
    results: z.array(resultSchema()).describe('newest first'),
    total_count: z.number().int().describe('how many executions match, before limit'),
  });

const names = () => z.array(z.string());
const scan = () => z.record(z.string(), z.unknown()).nullable();

const entryOutput = () =>
  z.object({
    execution_id: z.string(),
    session_id: z.string().nullable(),
    language: z.string().nullable(),
    status: status(),
    code: z.string(),
    stdin: z.string().nullable(),
    stdout: z.string().describe('as returned at the time (already truncated to head + tail if it was long)'),
    stderr: z.string(),
    exit_code: z.number().int().nullable(),
    timed_out: z.boolean(),
    cancelled: z.boolean(),
    duration_ms: z.number(),
    memory_peak_mb: z.number().nullable(),
    packages_installed: names(),
    artifacts_created: names(),
    artifacts_modified: names(),
    artifacts_deleted: names(),
    artifacts_omitted: artifactsOmitted(),
    sandbox_mode: z.string().nullable(),
    working_dir: z.string().nullable(),
    script_name: z.string().nullable().describe('the saved script this run executed, if any'),
    limit: z
      .string()
      .nullable()
      .describe('the resource limit that stopped the run (memory, processes, cpu, file_size)'),
    network: z
      .array(networkConnectionSchema)
      .optional()
      .describe('CODEXEC_NETWORK=allowlist: every connection the code made through the egress proxy'),
    tool_calls: z
      .array(toolCallSchema)
      .optional()
      .describe('code mode: the downstream tool calls the code made, as in its result'),
    tool_calls_omitted: z
      .array(toolCallCountSchema)
      .optional()
      .describe('code mode: the calls past tool_calls, counted'),
    guardian_pre_scan: scan(),
    guardian_post_scan: scan(),
    agent_id: z.string().nullable(),
    trace_id: z.string().nullable(),
    chat_id: z.string().nullable(),
    executed_at: z.string(),
  });

const readOnly = { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false };

export function registerLogTools(server: McpServer, services: Services): void {
  defineTool(server, {
    name: 'search_execution_logs',
    title: 'Search past executions',
    description:
      'Search the code this server ran (runs, session sends, scripts), newest first: recall how something ' +
      'was done, or find earlier failures before retrying. Filter by language, status(), date, session and ' +
      'words in code, stdout and stderr. Results are previews; get_execution_log has the whole entry. ' +
      'Successful one-shot runs expire after 30 days, the rest after 90.',
    schemas: () => ({
      input: searchFiltersSchema(),
      output: searchOutput(),
    }),
    annotations: readOnly,
    handler: (args) => services.history.search(args, currentPrincipal()),
  });

  defineTool(server, {
    name: 'get_execution_log',
    title: 'Get one past execution',
    description:
      'The whole log entry of one execution (an execution_id from a result or a search): code, output, exit ' +
      'code, files, session, time, tool calls.',
    schemas: () => ({
      input: z.object({
        execution_id: z.string().min(1).max(200),
      }),
      output: entryOutput(),
    }),
    text: { plain: ['stdout', 'stderr', 'code'] },
    annotations: readOnly,
    handler: (args) => services.history.get(args.execution_id, currentPrincipal()),
  });
}
