import type { McpServer, ServerContext } from '@modelcontextprotocol/server';
import { z } from 'zod';
import { InvalidInputError } from '../../errors/index.js';
import { currentPrincipal } from '../../util/index.js';
import { defineTool } from '../define-tool.js';
import type { Gatekeeper } from '../guard.js';
import type { Services } from '../services.js';

// Background processes in a session, for long work: servers and
// watchers that keep running between calls, inside the session's sandbox (src/sessions/processes.ts).

const processId = () => z.string().min(1).describe('proc_… from start_process');

const processFields = () => ({
  process_id: z.string(),
  session_id: z.string(),
  command: z.string(),
  pid: z.number().int().nullable().describe("its pid in the session's sandbox (its process group)"),
  running: z.boolean(),
  exit_code: z.number().int().nullable().describe('null while running, or when a signal ended it'),
  signal: z
    .string()
    .nullable()
    .describe('the signal that ended it (SIGKILL: kill_process, or its session ended)'),
  started_at: z.string(),
  output_bytes: z.number().int().describe('bytes of output it wrote so far (stdout and stderr together)'),
  exposed_port: z
    .number()
    .int()
    .optional()
    .describe("start_process expose_port: the session's port it serves"),
});
const processInfo = () => z.object(processFields());

const readOutput = () =>
  z.object({
    ...processFields(),
    output: z
      .string()
      .describe('stdout and stderr as written, in order, from offset (at most 1 MiB per read)'),
    offset: z
      .number()
      .int()
      .describe('where output begins: the offset asked for, or the first byte still kept'),
    next_offset: z.number().int().describe('pass this as offset next time to read only what is new'),
    dropped_bytes: z
      .number()
      .int()
      .describe(
        'bytes after the offset asked for that are no longer kept (CODEXEC_MAX_PROCESS_OUTPUT_BYTES)',
      ),
    more: z.boolean().describe('more output is already there past next_offset'),
  });

const READ_ONLY = { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false };
const EFFECTS = { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: false };

/**
 * start_process runs a command (gated like execute_command): with CODEXEC_ENABLED=false there is
 * none of these tools, as no process can exist.
 */
export function registerProcessTools(server: McpServer, services: Services, gate: Gatekeeper): void {
  if (!services.config.gate.enabled) return;
  registerStartProcess(server, services, gate);
  registerReadProcessOutput(server, services);
  registerWriteStdin(server, services);
  registerKillProcess(server, services);
  registerListProcesses(server, services);
}

function registerStartProcess(server: McpServer, services: Services, gate: Gatekeeper): void {
  const { sessions, config } = services;
  const cap = config.processes.perSession;
  // Servers listen on the session's own loopback, or the host's network: not in landlock mode
  // with the network off (Unix sockets only there: its loopback would be the host's).
  const servers = config.network !== 'none' || config.sandboxMode !== 'landlock';
  defineTool(server, {
    name: 'start_process',
    title: 'Start a background process in a session',
    description:
      'Start a command (bash -c) in the background in a session and return its process_id at once: for ' +
      `watchers, builds in watch mode, long jobs${servers ? ', servers' : ''}. It shares the ` +
      "session's sandbox, files and limits. read_process_output reads it, write_stdin feeds it, kill_process " +
      `stops it. At most ${cap} per session; they end with it. For a command that finishes, use execute_command.`,
    schemas: () => ({
      input: z.object({
        session_id: z.string().min(1).describe('sess_… from start_session'),
        command: z.string().min(1, 'command must not be empty'),
        expose_port: z
          .number()
          .int()
          .min(1)
          .max(65535)
          .optional()
          .describe(
            "A port the command listens on in the session's loopback (127.0.0.1), served at the url returned (serve --http: with your token only; stdio: a Unix socket)",
          ),
      }),
      output: processInfo().extend({
        url: z
          .string()
          .optional()
          .describe('expose_port over serve --http: where the port is served, for your token only'),
        socket: z
          .string()
          .optional()
          .describe('expose_port over stdio: the Unix socket the port is served on'),
      }),
    }),
    annotations: { ...EFFECTS, openWorldHint: true },
    handler: async (args, ctx) => {
      sessions.processHost(args.session_id); // refused before anyone is asked
      const attempt = {
        tool: 'start_process',
        language: 'bash',
        code: args.command,
        sessionId: args.session_id,
      };
      const start = async () => {
        const info = await sessions.startProcess(args.session_id, args.command, args.expose_port);
        return args.expose_port === undefined
          ? info
          : { ...info, ...exposedAt(ctx, sessions, args.session_id, args.expose_port) };
      };
      return gate.run(ctx, attempt, start, noFacts);
    },
  });
}

/**
 * Where an exposed port is served: over serve --http, `/p/<session>/<port>/` of the address the
 * call came to; over stdio, the forwarder's socket.
 */
function exposedAt(
  ctx: ServerContext,
  sessions: Services['sessions'],
  sessionId: string,
  port: number,
): { url: string } | { socket: string } | undefined {
  const request = ctx.http?.req;
  if (request) return { url: new URL(`/p/${sessionId}/${port}/`, request.url).href };
  const socket = sessions.exposedPort(currentPrincipal(), sessionId, port);
  return socket === undefined ? undefined : { socket };
}

function registerReadProcessOutput(server: McpServer, services: Services): void {
  const { sessions, config } = services;
  defineTool(server, {
    name: 'read_process_output',
    title: 'Read a background process',
    description:
      "A background process's output (stdout and stderr as written) from offset, and whether it still runs. " +
      'Poll with the last next_offset to get only new output. The last ' +
      `${Math.round(config.processes.outputBytes / 1024)} KiB are kept; dropped_bytes counts what was lost.`,
    schemas: () => ({
      input: z.object({
        process_id: processId(),
        offset: z.number().int().min(0).optional().describe('Byte to read from (default 0)'),
      }),
      output: readOutput(),
    }),
    text: { plain: ['output'] },
    annotations: READ_ONLY,
    handler: async (args) => sessions.readProcess(args.process_id, args.offset ?? 0),
  });
}

function registerWriteStdin(server: McpServer, services: Services): void {
  const { sessions } = services;
  defineTool(server, {
    name: 'write_stdin',
    title: 'Write to a background process or a session',
    description:
      "Write text to a background process's stdin (include a line's newline); eof: true then closes it. " +
      "With session_id instead: to the session's own stdin, at once (send_to_session {input} is the usual " +
      'answer to waiting_for_input).',
    schemas: () => ({
      input: z.object({
        process_id: processId().optional(),
        session_id: z.string().min(1).optional().describe('Instead of process_id: a session'),
        data: z.string().describe('UTF-8; may be empty with eof'),
        eof: z.boolean().optional().describe('Close stdin after writing'),
      }),
      output: processInfo()
        .partial()
        .extend({ session_id: z.string(), bytes_written: z.number().int() })
        .describe('the process (with process_id), or the session and bytes written (with session_id)'),
    }),
    annotations: EFFECTS,
    handler: async (args) => {
      if ((args.process_id === undefined) === (args.session_id === undefined)) {
        throw new InvalidInputError(
          'give either process_id (a background process) or session_id (a session)',
        );
      }
      if (args.session_id !== undefined)
        return sessions.writeStdin(args.session_id, args.data, args.eof ?? false);
      return sessions.writeProcess(args.process_id as string, args.data, args.eof ?? false);
    },
  });
}

function registerKillProcess(server: McpServer, services: Services): void {
  const { sessions } = services;
  defineTool(server, {
    name: 'kill_process',
    title: 'Kill a background process',
    description:
      'SIGKILL a background process and its process group; its output stays readable until its session ends.',
    schemas: () => ({
      input: z.object({ process_id: processId() }),
      output: processInfo(),
    }),
    annotations: EFFECTS,
    handler: (args) => sessions.killProcess(args.process_id),
  });
}

function registerListProcesses(server: McpServer, services: Services): void {
  const { sessions } = services;
  defineTool(server, {
    name: 'list_processes',
    title: 'List background processes',
    description: 'List your background processes in every live session, running or exited.',
    schemas: () => ({
      input: z.object({}),
      output: z.object({ processes: z.array(processInfo()) }),
    }),
    annotations: READ_ONLY,
    handler: async () => sessions.listProcesses(),
  });
}

/** Starting a process has no result to audit beyond the attempt itself. */
function noFacts() {
  return { execution_id: null, exit_code: null, duration_ms: null, stdout: '' };
}
