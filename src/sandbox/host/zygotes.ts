// The zygotes of a backend (zygote.ts): one per interpreter and start-up environment, each forking
// the warm Python or Node drivers of the runs that match it.
import { basename, dirname } from 'node:path';
import type { SandboxSpec } from '../types.js';
import { DRIVERS, Zygote } from './zygote.js';

/**
 * Variables a run's sandbox may set to its own values (most of them paths in its workspace) without
 * a zygote of its own: the forked process takes the whole of the run's environment before the
 * driver starts (drivers/zygote.py), and of these the interpreter reads at start-up only PYTHONPATH
 * (and CODEXEC_PYTHON_PACKAGES, through drivers/mpl/sitecustomize.py), which the zygote then puts
 * on sys.path as the interpreter would have, and HOME, for a user
 * site-packages the zygote never has (its HOME does not exist; site's user dirs are cleared). The
 * matplotlib ones (engine/images.ts figureEnv) are read only once the program imports matplotlib
 * (MPLCONFIGDIR), saves a figure (CODEXEC_FIGURES_DIR) or fontconfig builds its cache
 * (XDG_CACHE_HOME).
 */
const PER_RUN_ENV: ReadonlySet<string> = new Set([
  'PYTHONPATH',
  'CODEXEC_PYTHON_PACKAGES',
  'HOME',
  'CODEXEC_FIGURES_DIR',
  'MPLCONFIGDIR',
  'XDG_CACHE_HOME',
  // Node's module paths, read again in the fork (drivers/zygote_node.mjs).
  'NODE_PATH',
]);

/**
 * The warm drivers a zygote forks, by file: Python's itself, Node's through a Node template; bash's
 * is exec'd by the fork once confined (a sandbox made by the nest costs less than bwrap's).
 */
const FORKED = { 'warm_python.py': 'python', 'warm_node.mjs': 'node', 'warm_bash.sh': 'exec' } as const;

export class Zygotes {
  private readonly zygotes = new Map<string, Zygote>();

  /** Each zygote is let go after `idleMs` without a fork. */
  constructor(private readonly idleMs: number) {}

  /**
   * The zygote of the spec's interpreter (drivers/zygote.py) that forks its warm driver, made on
   * first use; undefined for a spec that is no such driver's. The variables a run may change
   * (PER_RUN_ENV) are set in the forked process; the others must match. A Node's zygote is run by
   * `hostPython`, and only where `node` forks are allowed (the backend's forksDrivers('node')); so
   * is the one zygote that execs other drivers, where `exec` ones are (forksDrivers('bash')): the
   * fork takes the run's whole environment with the exec.
   */
  for(
    spec: SandboxSpec,
    hostPython: string | undefined,
    allowed: { readonly node: boolean; readonly exec: boolean },
  ): Zygote | undefined {
    const [interpreter, driver, ...rest] = spec.argv;
    if (!spec.zygote || !interpreter || !driver || rest.length > 0 || dirname(driver) !== DRIVERS)
      return undefined;
    const kind = FORKED[basename(driver) as keyof typeof FORKED];
    if (!kind || (kind !== 'python' && (!allowed[kind] || !hostPython))) return undefined;
    // The exec zygote is one for every run: the fork takes the run's whole environment.
    const fixed =
      kind === 'exec'
        ? {}
        : Object.fromEntries(Object.entries(spec.env).filter(([name]) => !PER_RUN_ENV.has(name)));
    const key = JSON.stringify(kind === 'exec' ? ['exec', hostPython] : [interpreter, fixed]);
    let zygote = this.zygotes.get(key);
    if (!zygote) {
      zygote =
        kind === 'python'
          ? new Zygote(interpreter, fixed, this.idleMs)
          : new Zygote(
              hostPython as string,
              fixed,
              this.idleMs,
              kind === 'node' ? interpreter : undefined,
              kind === 'exec',
            );
      this.zygotes.set(key, zygote);
    }
    return zygote;
  }
}
