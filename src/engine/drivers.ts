// The warm drivers a pool starts, and the program file a warm workspace holds ready for its run.
import { openSync } from 'node:fs';
import { join } from 'node:path';
import type { ScriptFile } from '../pool/index.js';
import { type InterpreterKind, RUNTIMES } from '../runtimes/index.js';
import { NODE_FORKS } from '../sandbox/index.js';
import { packagePath } from '../util/index.js';

export const SCRIPT_BASENAME = '_codexec_script';

/**
 * Each warm driver (all write the run's end mark after the program's output); the files it
 * imports; whether a backend may fork it from a pre-initialised interpreter (the namespace zygote)
 * instead of starting it (Node's where its fork addon was built).
 */
export const WARM_DRIVERS: Record<
  InterpreterKind,
  { readonly file: string; readonly imports: readonly string[]; readonly forkable: boolean }
> = {
  python: { file: 'warm_python.py', imports: [], forkable: true },
  node: {
    file: 'warm_node.mjs',
    imports: ['warm_node_prime.mjs', 'node_program.mjs'],
    forkable: NODE_FORKS,
  },
  // Exec'd by a zygote's fork where the nest makes its sandbox (the backend's forksDrivers('bash')).
  bash: { file: 'warm_bash.sh', imports: [], forkable: true },
};

export const driverPath = (file: string) => packagePath('drivers', file);

/**
 * The program's file of a warm workspace, made before its sandbox starts (which is lent what the
 * workspace holds) and kept open, so the run writes it in one call: creating it then cost ~0.3 ms.
 */
export function openScriptFile(execDir: string, kind: InterpreterKind): ScriptFile {
  const path = join(execDir, `${SCRIPT_BASENAME}.${RUNTIMES[kind].extension}`);
  return { path, fd: openSync(path, 'wx', 0o644) };
}
