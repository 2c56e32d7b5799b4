import type { McpServer } from '@modelcontextprotocol/server';
import { z } from 'zod';
import { InvalidInputError } from '../../errors/index.js';
import { runtimeRefusal } from '../../policy/index.js';
import {
  closeResultSchema,
  sendResultSchema,
  sessionInfoSchema,
  startResultSchema,
} from '../../results/index.js';
import { assertPtyLanguage } from '../../sessions/index.js';
import { codeModeInput, discovers, sessionSampler } from '../codemode.js';
import { defineTool } from '../define-tool.js';
import { egressInput } from '../egress.js';
import { type Gatekeeper, runFacts } from '../guard.js';
import { withProgress } from '../progress.js';
import { runContent } from '../resources.js';
import { savedHelp } from '../saved-output.js';
import type { Services } from '../services.js';
import { RUN_TEXT } from '../text.js';
import { WAITING_HELP } from '../waiting.js';
import { advertisedArguments } from './arguments.js';
import { advertisedLanguage, languageInput } from './languages.js';

const sessionId = () => z.string().min(1).describe('sess_… from start_session');

const LANGUAGE_HELP = 'node runs JavaScript';
const startInput = () =>
  z.object({
    language: languageInput().describe(LANGUAGE_HELP),
    name: z.string().min(1).max(200).optional().describe('Optional human-readable name'),
    working_dir: z
      .string()
      .min(1)
      .optional()
      .describe(
        'An existing directory beneath CODEXEC_ALLOWED_PATHS to work in. Default: a fresh session workspace',
      ),
    pty: z
      .boolean()
      .optional()
      .describe(
        'bash only: run on a terminal (tty, stty and programs that want one work; TERM=dumb, 200x50, no ' +
          'echo); stdout and stderr then arrive merged on stdout',
      ),
    ...codeModeInput(),
    ...egressInput(),
  });
const sendInput = () =>
  z.object({
    session_id: sessionId(),
    code: z.string().min(1, 'code must not be empty').optional(),
    input: z
      .string()
      .optional()
      .describe(
        'Instead of code: the answer to a send waiting_for_input, written to its stdin (a newline is added)',
      ),
    interrupt: z
      .literal(true)
      .optional()
      .describe('Instead of code: interrupt the code waiting_for_input (SIGINT); the state is kept'),
    timeout_ms: z
      .number()
      .int()
      .positive()
      .optional()
      .describe('Wall-clock limit for this send in ms (default 30000; clamped to the server maximum)'),
  });
const listOutput = () => z.object({ sessions: z.array(sessionInfoSchema()) });

const EFFECTS = { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: true };

/** start_session and send_to_session run code: they exist only while CODEXEC_ENABLED is true. */
export function registerSessionTools(server: McpServer, services: Services, gate: Gatekeeper): void {
  const { config } = services;
  if (config.gate.enabled) {
    registerStartSession(server, services);
    registerSendToSession(server, services, gate);
  }
  registerReadTools(server, services);
}

function registerStartSession(server: McpServer, services: Services): void {
  const { sessions, config } = services;
  defineTool(server, {
    name: 'start_session',
    title: 'Start a REPL session',
    description:
      'Start a persistent Python, JavaScript (node), TypeScript or Bash session, like a Jupyter kernel: ' +
      'variables, imports, functions and loaded data (for bash, the current directory) persist across ' +
      'send_to_session calls. For multi-step work (load, explore, plot); execute_code for one-off programs. ' +
      `At most ${config.maxSessions} of yours at once; one idle for ` +
      `${Math.round(config.sessionIdleTimeoutMs / 60_000)} min is closed; close_session when done.`,
    schemas: () => {
      const input = startInput();
      return {
        input,
        advertisedInput: advertisedArguments(
          input.extend({ language: advertisedLanguage(config, LANGUAGE_HELP) }),
          services,
        ),
        output: startResultSchema(),
      };
    },
    annotations: EFFECTS,
    handler: async (args) => {
      // Starting runs no code of the caller's: only the runtime is checked; each send is gated.
      const refused = runtimeRefusal(args.language, config.gate.allowedRuntimes);
      if (refused) throw refused;
      if (args.pty) assertPtyLanguage(args.language);
      const explicit = args.allowed_tools !== undefined || args.enable_sampling;
      if (explicit && args.language === 'bash') {
        throw new InvalidInputError(
          'code mode (allowed_tools, enable_sampling) is for python, node and typescript',
        );
      }
      // Code mode: the session's view of the bridge lasts as long as the session.
      // Without allowed_tools, for discovery, where downstream servers are configured.
      const bridge =
        explicit || discovers(services, args.language)
          ? services.bridge.openRun({
              allowedTools: args.allowed_tools ?? [],
              explicit,
              signal: new AbortController().signal,
            })
          : undefined;
      const sampling = args.enable_sampling
        ? { rounds: args.max_sampling_rounds, tokens: args.max_sampling_tokens }
        : undefined;
      // The session holds its directory from its start on; a start that fails lets it go.
      const workingDir = args.working_dir
        ? services.hostDirs.open(args.working_dir, 'working_dir')
        : undefined;
      try {
        return await sessions.start({
          language: args.language,
          name: args.name,
          workingDir,
          bridge,
          sampling,
          allowedDomains: args.allowed_domains,
          pty: args.pty,
        });
      } catch (error) {
        workingDir?.close();
        throw error;
      }
    },
  });
}

function registerSendToSession(server: McpServer, services: Services, gate: Gatekeeper): void {
  const { sessions } = services;
  defineTool(server, {
    name: 'send_to_session',
    title: 'Run code in a session',
    description:
      "Run code in a session, on the state of earlier sends. A trailing expression's value is shown, as in " +
      'a REPL; top-level await works. An error keeps the session. On timeout the code is interrupted and the ' +
      'state kept (code that ignores the interrupt gets the session killed: session_alive=false). Output ' +
      'that background work prints between sends shows up in the next send. ' +
      WAITING_HELP +
      savedHelp(services.config),
    schemas: () => {
      const input = sendInput();
      return { input, advertisedInput: advertisedArguments(input, services), output: sendResultSchema() };
    },
    text: RUN_TEXT,
    extraContent: runContent,
    tasks: services.tasks,
    annotations: EFFECTS,
    handler: async (args, ctx) => {
      const { language } = sessions.describe(args.session_id); // SESSION_NOT_FOUND before asking
      const given = [args.code, args.input, args.interrupt].filter((value) => value !== undefined).length;
      if (given !== 1) {
        throw new InvalidInputError(
          'give one of code (to run), input (to answer a send waiting for input) or interrupt: true',
        );
      }
      const options = {
        timeoutMs: args.timeout_ms,
        sampler: sessionSampler(server, services, args.session_id, ctx),
        askEgress: gate.egressAsker(ctx, 'send_to_session', args.session_id),
      };
      if (args.code === undefined) {
        // Data for code the gate let run (as write_stdin's is), or its interrupt: no new decision,
        // but a run slot.
        const answer = args.input !== undefined ? { input: args.input } : { interrupt: true as const };
        return gate.resume(ctx, 'send_to_session', () =>
          withProgress(ctx, (progress) =>
            sessions.send(args.session_id, { ...answer, ...options, ...progress }),
          ),
        );
      }
      const code = args.code as string;
      const attempt = { tool: 'send_to_session', language, code, sessionId: args.session_id };
      return gate.run(
        ctx,
        attempt,
        // Output streams as progress notifications when the client asked for them (progressToken).
        () =>
          withProgress(ctx, (progress) => sessions.send(args.session_id, { code, ...options, ...progress })),
        runFacts,
      );
    },
  });
}

function registerReadTools(server: McpServer, services: Services): void {
  const { sessions } = services;
  defineTool(server, {
    name: 'close_session',
    title: 'Close a session',
    description:
      'End a session and every process it started, and delete its workspace (not a working_dir you gave).',
    schemas: () => ({
      input: z.object({ session_id: sessionId() }),
      output: closeResultSchema(),
    }),
    annotations: { ...EFFECTS, openWorldHint: false },
    handler: (args) => sessions.close(args.session_id),
  });
  defineTool(server, {
    name: 'kill_session',
    title: 'Kill a session now',
    description:
      'SIGKILL a session at once, even mid-send (that send returns session_alive=false), with its processes, ' +
      'and delete its workspace: for one that hangs; close_session is the usual end.',
    schemas: () => ({
      input: z.object({ session_id: sessionId() }),
      output: closeResultSchema(),
    }),
    annotations: { ...EFFECTS, openWorldHint: false },
    handler: (args) => sessions.close(args.session_id, 'killed'),
  });
  defineTool(server, {
    name: 'list_sessions',
    title: 'List sessions',
    description:
      'List running sessions: language, name, age, last activity, sends, memory (MB), installed packages.',
    schemas: () => ({
      input: z.object({}),
      output: listOutput(),
    }),
    annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
    handler: () => sessions.list(),
  });
}
