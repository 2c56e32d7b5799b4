import { closeSync } from 'node:fs';
import { mkdir, realpath } from 'node:fs/promises';
import { isAbsolute, join, relative, resolve } from 'node:path';
import { type Config, commandWorkspace } from '../config/index.js';
import { ForbiddenPathError, InvalidInputError } from '../errors/index.js';
import {
  currentPrincipal,
  expandHome,
  HeldDir,
  isWithin,
  openDirBeneath,
  openRoot,
  segmentsOf,
} from '../util/index.js';
import type { HostDirs } from './host-dir.js';

/**
 * execute_command's directory, held by descriptor: the principal's persistent workspace (made on
 * first use), a directory beneath it (a relative work_dir, or an absolute one inside it), or a
 * host directory beneath CODEXEC_ALLOWED_PATHS (HostDirs: its rules and its owner). Beneath the
 * workspace each name is opened without following a symlink, so neither `..` nor a link leads out.
 * The caller closes what it gets when the command ends.
 */
export async function openCommandDir(
  workDir: string | undefined,
  config: Config,
  hostDirs: HostDirs,
  principal = currentPrincipal(),
): Promise<HeldDir> {
  if (workDir?.includes('\0')) throw new InvalidInputError('work_dir must not contain NUL characters');
  const own = commandWorkspace(config, principal);
  // Root's (or the server user's) alone between commands; lent to a command's uid while it runs.
  await mkdir(own, { recursive: true, mode: 0o700 });
  const workspace = await realpath(own);
  if (workDir === undefined || workDir === '' || workDir === '.') return HeldDir.ofOwn(workspace);
  const absolute = workDir.startsWith('~') || isAbsolute(workDir);
  let rel = workDir;
  if (absolute) {
    // Written inside the workspace: the rest is opened as a relative work_dir is, links refused.
    const written = resolve(expandHome(workDir));
    const base = [own, workspace].find((dir) => isWithin(written, dir));
    if (base !== undefined) rel = relative(base, written);
    else {
      const real = await realpath(written).catch(() => undefined);
      if (real === undefined || !isWithin(real, workspace)) return hostDirs.open(workDir, 'work_dir');
      rel = relative(workspace, real);
    }
    if (rel === '') return HeldDir.ofOwn(workspace);
  }
  try {
    return openInWorkspace(workspace, rel, workDir);
  } catch (error) {
    // The caller is told which argument to fix.
    if (error instanceof ForbiddenPathError) throw new ForbiddenPathError(`work_dir ${error.message}`);
    throw error;
  }
}

function openInWorkspace(workspace: string, rel: string, workDir: string): HeldDir {
  const segments = segmentsOf(rel);
  const rootFd = openRoot(workspace);
  try {
    const fd = openDirBeneath(rootFd, segments, { shown: workDir });
    return HeldDir.adopt(join(workspace, ...segments), fd, { within: workspace });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT')
      throw new InvalidInputError(
        `work_dir ${workDir} does not exist; create it first (mkdir -p) or omit work_dir`,
      );
    throw error;
  } finally {
    closeSync(rootFd);
  }
}
