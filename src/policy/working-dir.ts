import { realpath, stat } from 'node:fs/promises';
import { homedir } from 'node:os';
import { join } from 'node:path';
import type { Config } from '../config/index.js';
import { ForbiddenPathError, InvalidInputError } from '../errors/index.js';
import { expandHome, isWithin } from '../util/index.js';

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

/**
 * Validate a caller-supplied working directory. Symlinks are resolved first, so a link into a
 * forbidden place is refused; a directory that contains a forbidden place is refused too, since
 * the code could reach it by a relative path. Nothing of codexec's own is allowed, the sandbox dir
 * included: a run given it (or another run's workspace) would get every workspace read-write,
 * other principals' and code mode's sockets among them (issue #30).
 */
export async function resolveWorkingDir(input: string, config: Config): Promise<string> {
  if (input.includes('\0')) throw new InvalidInputError('working_dir must not contain NUL characters');
  const requested = expandHome(input);
  // Judge the real path when it exists, so a symlink into a forbidden place is caught; a missing
  // path is judged as written, so the refusal names the real problem.
  const real = await realOrSelf(requested);
  for (const path of forbiddenPaths(config)) {
    const forbidden = await realOrSelf(path);
    if (isWithin(real, forbidden)) {
      throw new ForbiddenPathError(`working_dir ${input} is inside ${path}, which code may not use`);
    }
    if (isWithin(forbidden, real)) {
      throw new ForbiddenPathError(`working_dir ${input} contains ${path}, which code may not use`);
    }
  }
  return mustBeDirectory(real, input);
}

async function mustBeDirectory(real: string, input: string): Promise<string> {
  const info = await stat(real).catch(() => undefined);
  if (!info)
    throw new InvalidInputError(`working_dir ${input} does not exist; create it first or omit working_dir`);
  if (!info.isDirectory()) throw new InvalidInputError(`working_dir ${input} is not a directory`);
  return real;
}

async function realOrSelf(path: string): Promise<string> {
  try {
    return await realpath(path);
  } catch {
    return path;
  }
}
