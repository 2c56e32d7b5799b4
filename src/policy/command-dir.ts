import { mkdir, realpath, stat } from 'node:fs/promises';
import { isAbsolute, join } from 'node:path';
import { type Config, commandWorkspace } from '../config/index.js';
import { ForbiddenPathError, InvalidInputError } from '../errors/index.js';
import { currentPrincipal, expandHome, isWithin } from '../util/index.js';
import { forbiddenPaths } from './working-dir.js';

/**
 * execute_command's directory: the persistent workspace (made on first use), a path relative to
 * it, or an absolute path inside the workspace or CODEXEC_ALLOWED_PATHS. Symlinks are resolved
 * before judging, so neither `..` nor a link leads out; forbidden paths stay refused even inside
 * an allowed one. Returns the real path of an existing directory.
 */
export async function resolveCommandDir(
  workDir: string | undefined,
  config: Config,
  principal = currentPrincipal(),
): Promise<string> {
  if (workDir?.includes('\0')) throw new InvalidInputError('work_dir must not contain NUL characters');
  const own = commandWorkspace(config, principal);
  await mkdir(own, { recursive: true, mode: 0o755 });
  const workspace = await realpath(own);
  await refuseForbidden(workspace, own, config, workspace);
  if (workDir === undefined || workDir === '' || workDir === '.') return workspace;
  const requested =
    workDir.startsWith('~') || isAbsolute(workDir) ? expandHome(workDir) : join(workspace, workDir);
  const real = await realOrSelf(requested);
  const roots = [workspace, ...(await Promise.all(config.command.allowedPaths.map(realOrSelf)))];
  if (!roots.some((root) => isWithin(real, root))) {
    const where = isAbsolute(workDir) ? 'CODEXEC_WORKSPACE or CODEXEC_ALLOWED_PATHS' : 'the workspace';
    throw new ForbiddenPathError(
      `work_dir ${workDir} is outside ${where}; a relative work_dir is resolved in the workspace`,
    );
  }
  await refuseForbidden(real, workDir, config, workspace);
  const info = await stat(real).catch(() => undefined);
  if (!info)
    throw new InvalidInputError(
      `work_dir ${workDir} does not exist; create it first (mkdir -p) or omit work_dir`,
    );
  if (!info.isDirectory()) throw new InvalidInputError(`work_dir ${workDir} is not a directory`);
  return real;
}

/**
 * Inside or around a forbidden path → FORBIDDEN_PATH. The principal's own workspace lies in
 * CODEXEC_HOME by default, and is one of the forbidden places itself: within it, the forbidden
 * places that hold it (home, the local workspace when it is the caller's) do not count.
 */
async function refuseForbidden(real: string, shown: string, config: Config, workspace: string) {
  for (const path of forbiddenPaths(config)) {
    const forbidden = await realOrSelf(path);
    if (isWithin(real, workspace) && isWithin(workspace, forbidden)) continue;
    if (isWithin(real, forbidden) || isWithin(forbidden, real)) {
      throw new ForbiddenPathError(
        `work_dir ${shown} is inside or contains ${path}, which commands may not use`,
      );
    }
  }
}

async function realOrSelf(path: string): Promise<string> {
  try {
    return await realpath(path);
  } catch {
    return path;
  }
}
