// Where a principal's things live under CODEXEC_HOME, and the directories runs live beneath.
import { join } from 'node:path';
import { LOCAL_PRINCIPAL, principalFolder } from '../util/index.js';
import type { Config } from './load.js';

/**
 * execute_command's persistent workspace of `principal` (DESIGN §9): the local principal (stdio,
 * the CLI) keeps CODEXEC_WORKSPACE; every other one has its own in `$CODEXEC_HOME/principals/`,
 * beside (never inside) the local one, so no principal's workspace holds another's.
 */
export function commandWorkspace(config: Pick<Config, 'home' | 'command'>, principal: string): string {
  if (principal === LOCAL_PRINCIPAL) return config.command.workspace;
  return join(config.home, 'principals', principalFolder(principal), 'workspace');
}

/**
 * The global package environment of `principal` (install_package without a session): the local
 * principal's is `$CODEXEC_HOME/envs`; every other one's is its own, beside its command workspace.
 */
export function globalPackageDirs(
  config: Pick<Config, 'envsDir' | 'home'>,
  principal: string = LOCAL_PRINCIPAL,
) {
  const root =
    principal === LOCAL_PRINCIPAL
      ? config.envsDir
      : join(config.home, 'principals', principalFolder(principal), 'envs');
  const node = join(root, 'node');
  return { python: join(root, 'python'), node, nodeModules: join(node, 'node_modules') };
}

/**
 * The directories runs live beneath that are codexec's to open to its sandbox user: CODEXEC_HOME,
 * the workspaces, package environments and command workspaces (every principal's). Not the
 * host directories of CODEXEC_ALLOWED_PATHS: code works there as their owner, and codexec changes
 * nothing of theirs.
 */
export function runRoots(config: Pick<Config, 'sandboxDir' | 'envsDir' | 'home' | 'command'>): string[] {
  return [config.home, config.sandboxDir, config.envsDir, config.command.workspace];
}
