import { type DiskQuota, SESSION_TIMING } from '../disk/index.js';
import type { Session } from './session.js';

/**
 * Watch a session's workspace for its whole life (code may keep writing between sends): past
 * CODEXEC_MAX_WORKSPACE_MB, or its principal past CODEXEC_MAX_PRINCIPAL_DISK_MB, the session is
 * killed. Returns what stops the watch and forgets the workspace, for the session's end.
 */
export function watchSessionDisk(
  quota: DiskQuota,
  workspace: string,
  principal: string,
  session: Session,
): () => void {
  const watch = quota.watch(workspace, principal, SESSION_TIMING, (note) => void session.stopForLimit(note));
  return () => {
    watch.stop();
    quota.forget(workspace);
  };
}
