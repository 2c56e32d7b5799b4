import { homedir } from 'node:os';
import { join } from 'node:path';
import type { Config } from '../config/index.js';

/**
 * Paths code may never be pointed at: credentials, system configuration, codexec's own state —
 * every workspace (runs', sessions', execute_command's of every principal) and package
 * environment included, wherever the settings put them.
 */
export function forbiddenPaths(config: Config, home = homedir()): string[] {
  const inHome = ['.ssh', '.gnupg', '.aws', '.config'].map((name) => join(home, name));
  return [
    ...inHome,
    '/etc',
    '/var',
    '/proc',
    '/sys',
    '/dev',
    '/boot',
    config.home,
    config.runHome,
    config.logDir,
    config.scriptsDir,
    config.sandboxDir,
    config.envsDir,
    config.command.workspace,
  ];
}
