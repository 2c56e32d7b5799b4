import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { Config } from '../config/index.js';
import { globalPackages, type PackageAccess } from '../engine/index.js';
import type { PackageEnv } from '../packages/index.js';
import type { InterpreterKind } from '../runtimes/index.js';

/** Where install_package with a session_id puts packages: inside the session's own workspace. */
export function sessionPackageEnv(workspace: string, kind: 'python' | 'node'): PackageEnv {
  const rel = join('.packages', kind);
  return { language: kind, dir: join(workspace, rel), root: workspace, rel };
}

/**
 * What a new session sees: its own package directory first (empty until install_package fills
 * it; created now so the interpreter notices what lands there later), then the global
 * environment that one-shot runs see too.
 */
export async function sessionPackages(
  config: Pick<Config, 'envsDir' | 'runHome'>,
  interpreter: InterpreterKind,
  workspace: string,
): Promise<PackageAccess> {
  const global = await globalPackages(config, interpreter, workspace);
  if (interpreter === 'bash') return global;
  const own = sessionPackageEnv(workspace, interpreter).dir;
  // Python's go after the standard library (drivers/mpl/sitecustomize.py), never on PYTHONPATH.
  const variable = interpreter === 'python' ? 'CODEXEC_PYTHON_PACKAGES' : 'NODE_PATH';
  const dir = interpreter === 'python' ? own : join(own, 'node_modules');
  await mkdir(dir, { recursive: true });
  const env = { ...global.env, [variable]: [dir, global.env[variable]].filter(Boolean).join(':') };
  return { env, readable: global.readable };
}
