// Code a one-shot tool sends to a session instead of running it alone (execute_code {session_id},
// run_script {session_id}): checked against the session, gated, its output streamed as progress,
// and answered in execute_code's shape with the session's place beside the send's fields.
import type { InputRequiredResult, McpServer, ServerContext } from '@modelcontextprotocol/server';
import { InvalidInputError } from '../errors/index.js';
import type { Language } from '../runtimes/index.js';
import type { SendResult } from '../sessions/index.js';
import { sessionSampler } from './codemode.js';
import { type Gatekeeper, runFacts } from './guard.js';
import { withProgress } from './progress.js';
import type { Services } from './services.js';
import type { TaskHandle } from './tasks.js';

export interface SessionRun {
  readonly tool: 'execute_code' | 'run_script';
  readonly sessionId: string;
  readonly language: Language;
  readonly code: string;
  readonly timeoutMs: number | undefined;
  /** The refusal when the session runs another language than `language`. */
  readonly otherLanguage: (sessionLanguage: string) => string;
  /** After the send, before its answer (run_script counts the script's run). */
  readonly after?: (sent: SendResult) => Promise<unknown>;
}

export async function sendAsRun(
  server: McpServer,
  services: Services,
  gate: Gatekeeper,
  ctx: ServerContext,
  run: SessionRun,
): Promise<
  (SendResult & { working_dir: string; sandbox_mode: string; warm: true }) | InputRequiredResult | TaskHandle
> {
  const { tool, sessionId } = run;
  const session = services.sessions.describe(sessionId); // SESSION_NOT_FOUND before asking
  if (session.language !== run.language) throw new InvalidInputError(run.otherLanguage(session.language));
  return gate.run(
    ctx,
    { tool, language: run.language, code: run.code, sessionId },
    () =>
      withProgress(ctx, async (options) => {
        const sent = await services.sessions.send(sessionId, {
          code: run.code,
          timeoutMs: run.timeoutMs,
          sampler: sessionSampler(server, services, sessionId, ctx),
          askEgress: gate.egressAsker(ctx, tool, sessionId),
          ...options,
        });
        await run.after?.(sent);
        return { ...sent, working_dir: session.workingDir, sandbox_mode: session.sandboxMode, warm: true };
      }),
    runFacts,
  );
}
