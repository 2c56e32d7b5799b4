// The two lines a session's life writes in its log: session_start (beside start_session's answer)
// and, once its workspace is removed, session_end — so that line means the session is entirely gone.
import { rm } from 'node:fs/promises';
import type { LogWriter } from '../logs/index.js';
import type { Exit } from '../sandbox/index.js';
import { isoTime, log } from '../util/index.js';
import type { Session } from './session.js';
import type { EndReason, StartRequest, StartResult } from './types.js';

/** The session_start line, then start_session's answer. */
export async function announce(
  logs: LogWriter,
  request: StartRequest,
  session: Session,
  { sandbox_mode, pty }: { readonly sandbox_mode: string; readonly pty: boolean },
): Promise<StartResult> {
  const { id } = session;
  const started_at = isoTime(session.startedAt);
  const working_dir = session.options.cwd;
  await logs.appendSession(id, {
    type: 'session_start',
    session_id: id,
    language: request.language,
    name: request.name ?? null,
    pid: session.pid,
    agent_id: null,
    working_dir,
    sandbox_mode,
    ...(pty && { pty: true }),
    started_at,
  });
  return {
    success: true,
    session_id: id,
    language: request.language,
    name: request.name ?? null,
    pid: session.pid,
    started_at,
    working_dir,
    sandbox_mode,
  };
}

export interface Ending {
  readonly exit: Exit;
  readonly reason: EndReason;
  readonly workspace: string;
}

/** Remove the ended session's workspace, then write its session_end line. */
export async function closeOut(logs: LogWriter, session: Session, { exit, reason, workspace }: Ending) {
  await rm(workspace, { recursive: true, force: true }).catch((error: Error) =>
    log('warn', `could not remove session workspace ${workspace}: ${error.message}`),
  );
  await logs
    .appendSession(session.id, {
      type: 'session_end',
      session_id: session.id,
      reason,
      total_duration_ms: Date.now() - session.startedAt.getTime(),
      executions_count: session.executionsCount,
      exit_code: exit.code,
      signal: exit.signal,
      at: isoTime(),
    })
    .catch(() => {}); // LogWriter has reported it
}
