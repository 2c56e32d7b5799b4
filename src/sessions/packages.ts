import { access, symlink } from 'node:fs/promises';
import { join } from 'node:path';
import type { InterpreterKind } from '../runtimes/index.js';

export interface PackageAccess {
  readonly env: Record<string, string>;
  readonly readable: string[];
}

/**
 * Make the global package environment (install_package without a session) visible to a new
 * session, as one-shot runs see it: PYTHONPATH for Python; for Node a `node_modules` link in
 * the session workspace (which `import` resolves from the working directory) plus NODE_PATH.
 */
export async function globalPackages(
  envsDir: string,
  interpreter: InterpreterKind,
  workspace: string,
): Promise<PackageAccess> {
  if (interpreter === 'python') {
    const dir = join(envsDir, 'python');
    return (await exists(dir)) ? { env: { PYTHONPATH: dir }, readable: [dir] } : { env: {}, readable: [] };
  }
  if (interpreter === 'node') {
    const dir = join(envsDir, 'node', 'node_modules');
    if (!(await exists(dir))) return { env: {}, readable: [] };
    await symlink(dir, join(workspace, 'node_modules'), 'dir').catch(() => {});
    return { env: { NODE_PATH: dir }, readable: [dir] };
  }
  return { env: {}, readable: [] };
}

const exists = (path: string) =>
  access(path).then(
    () => true,
    () => false,
  );
