// The files of an ended run, as read_file {execution_id, path} and codexec://exec/<id>/<path>
// find them.
import { existsSync } from 'node:fs';
import { relative } from 'node:path';
import { commandWorkspace } from '../config/index.js';
import { CodexecError } from '../errors/index.js';
import { type HeldDir, isWithin, type Root } from '../util/index.js';
import type { Services } from './services.js';

/**
 * Where a file of an ended run is: its own workspace (kept while it holds files, for
 * CODEXEC_WORKSPACE_RETENTION_HOURS), execute_command's workspace, or its host directory opened
 * again. Only the principal that ran it finds it (history.get refuses another's id as unknown).
 */
export async function locateRunFile(
  services: Services,
  id: string,
  path: string,
  principal: string,
): Promise<{ readonly root: Root; readonly path: string; readonly opened?: HeldDir }> {
  const entry = await services.history.get(id, principal);
  if (!entry.working_dir) throw new CodexecError('NOT_FOUND', `${id} recorded no working directory`);
  // A send's files are its session's: read from the directory the live session holds.
  if (entry.session_id) return { root: sessionDir(services, id, entry.session_id), path };
  if (isWithin(entry.working_dir, services.config.sandboxDir)) {
    const left =
      entry.artifacts_created.length + entry.artifacts_modified.length > 0 || entry.artifacts_omitted;
    if (!left || !existsSync(entry.working_dir))
      throw new CodexecError(
        'NOT_FOUND',
        `${id} kept no files: a run's workspace goes when it leaves none, and ` +
          `${services.config.disk.retentionMs / 3_600_000} h after its last change (CODEXEC_WORKSPACE_RETENTION_HOURS)`,
      );
    return { root: entry.working_dir, path };
  }
  // execute_command's workspace, which later commands may change: walked from its root.
  const workspace = commandWorkspace(services.config, principal);
  if (isWithin(entry.working_dir, workspace)) {
    const within = relative(workspace, entry.working_dir);
    return { root: workspace, path: within === '' ? path : `${within}/${path}` };
  }
  const opened = services.hostDirs.reopen(entry.working_dir);
  return { root: opened, path, opened };
}

/** The directory a live session holds; a session that ended took its workspace with it. */
function sessionDir(services: Services, id: string, sessionId: string): Root {
  try {
    return services.sessions.describe(sessionId).dir;
  } catch {
    throw new CodexecError(
      'NOT_FOUND',
      `${id} ran in session ${sessionId}, which has ended: its workspace went with it`,
    );
  }
}
