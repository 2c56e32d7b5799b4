// Where a principal's things live under CODEXEC_HOME, and the directories runs live beneath.
import { createHash } from 'node:crypto';
import { statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { LOCAL_PRINCIPAL, principalFolder } from '../util/index.js';
import type { Config } from './settings/index.js';

/** Where a root server whose default home its sandbox user cannot reach keeps its runs (runHome). */
export const SHARED_RUN_BASE = '/var/lib/codexec';

/**
 * The directory runs live beneath (workspaces, package environments, command workspaces, install
 * stages): CODEXEC_HOME, but for a root server with the default home (`~/.codexec`) behind a
 * directory other users may not search (`/root`, 0700, as in most containers). Its runs' uids
 * (group 65534) must reach their paths on the host's own tree in landlock mode, which binds nothing, and
 * codexec opens no directory that is not its own: those runs live in
 * `/var/lib/codexec/runs/<the first 16 hex digits of the home path's SHA-256>` instead, one per
 * home. The rest of its state (logs, scripts, databases, keys) stays in the home.
 */
export function runHome(home: string, how: { readonly explicit: boolean; readonly uid?: number }): string {
  if (how.explicit || how.uid !== 0 || othersMaySearchAbove(home)) return home;
  const id = createHash('sha256').update(home).digest('hex').slice(0, 16);
  return join(SHARED_RUN_BASE, 'runs', id);
}

/** Whether every existing directory above `path` lets any user search it (o+x). */
function othersMaySearchAbove(path: string): boolean {
  for (let dir = dirname(path); ; dir = dirname(dir)) {
    try {
      if ((statSync(dir).mode & 0o001) === 0) return false;
    } catch {
      // Not there yet: made by codexec later, as its own.
    }
    if (dir === dirname(dir)) return true;
  }
}

/**
 * execute_command's persistent workspace of `principal`: the local principal (stdio,
 * the CLI) keeps CODEXEC_WORKSPACE; every other one has its own in `$CODEXEC_HOME/principals/`,
 * beside (never inside) the local one, so no principal's workspace holds another's.
 */
export function commandWorkspace(config: Pick<Config, 'runHome' | 'command'>, principal: string): string {
  if (principal === LOCAL_PRINCIPAL) return config.command.workspace;
  return join(config.runHome, 'principals', principalFolder(principal), 'workspace');
}

/**
 * The global package environment of `principal` (install_package without a session): the local
 * principal's is `$CODEXEC_HOME/envs` (runHome); every other one's is its own, beside its command
 * workspace.
 */
export function globalPackageDirs(
  config: Pick<Config, 'envsDir' | 'runHome'>,
  principal: string = LOCAL_PRINCIPAL,
) {
  const root =
    principal === LOCAL_PRINCIPAL
      ? config.envsDir
      : join(config.runHome, 'principals', principalFolder(principal), 'envs');
  const node = join(root, 'node');
  return { python: join(root, 'python'), node, nodeModules: join(node, 'node_modules') };
}

/**
 * The directories runs live beneath that are codexec's to open to its sandbox user: where runs
 * live (CODEXEC_HOME, or all of SHARED_RUN_BASE when they were moved there), the workspaces and
 * package environments (every principal's). Not a command workspace itself, which is lent whole to
 * each command's uid, so closed to every other run; not the host directories of
 * CODEXEC_ALLOWED_PATHS: code works there as their owner, and codexec changes nothing of theirs.
 */
export function runRoots(config: Pick<Config, 'sandboxDir' | 'envsDir' | 'home' | 'runHome'>): string[] {
  return [config.runHome === config.home ? config.home : SHARED_RUN_BASE, config.sandboxDir, config.envsDir];
}

/**
 * codexec's trees that outlive a server and that its runs are lent: the command workspaces and
 * package environments, every principal's. A server killed mid-run never gives them back.
 */
export function sharedTrees(config: Pick<Config, 'envsDir' | 'runHome' | 'command'>): string[] {
  return [config.command.workspace, config.envsDir, join(config.runHome, 'principals')];
}
