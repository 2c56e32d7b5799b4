import { mkdir, realpath, stat } from 'node:fs/promises';
import { isAbsolute, join } from 'node:path';
import type { Config } from '../config/index.js';
import { ForbiddenPathError, InvalidInputError } from '../errors/index.js';
import { expandHome, isWithin } from '../util/index.js';
import { forbiddenPaths } from './working-dir.js';

/**
 * execute_command's directory: the persistent workspace (made on first use), a path relative to
 * it, or an absolute path inside the workspace or CODEXEC_ALLOWED_PATHS. Symlinks are resolved
 * before judging, so neither `..` nor a link leads out; forbidden paths stay refused even inside
 * an allowed one. Returns the real path of an existing directory.
 */
export async function resolveCommandDir(workDir: string | undefined, config: Config): Promise<string> {
  if (workDir?.includes('\0')) throw new InvalidInputError('work_dir must not contain NUL characters');
  await mkdir(config.command.workspace, { recursive: true, mode: 0o755 });
  const workspace = await realpath(config.command.workspace);
  // The workspace lies in CODEXEC_HOME by default: that one place in it is the tool's own.
  await refuseForbidden(workspace, config.command.workspace, config, workspace);
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

/** Inside or around a forbidden path → FORBIDDEN_PATH; CODEXEC_HOME only as the workspace's parent. */
async function refuseForbidden(real: string, shown: string, config: Config, workspace: string) {
  for (const path of forbiddenPaths(config)) {
    const forbidden = await realOrSelf(path);
    const ownPlace = path === config.home && forbidden !== workspace && isWithin(real, workspace);
    if (ownPlace && isWithin(workspace, forbidden)) continue;
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
