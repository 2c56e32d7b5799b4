// Warm drivers forked from a zygote (drivers/zygote.py): a Python of the sandbox's, started
// once and initialised, that builds each run's sandbox (bwrap around a placeholder) and forks the
// run's process into it. The process it reports is that run's own, already confined, its stdio
// connected here, waiting on its control channel; the zygote reports its end as bwrap would.
// A node zygote is the same helper (run by the host's Python) with a Node template that it has
// fork the runs (drivers/zygote_node.mjs, with native/node_fork.c built as NODE_FORK_ADDON).
import { existsSync } from 'node:fs';
import { dirname } from 'node:path';
import { packagePath } from '../../util/index.js';
import type { SandboxSpec } from '../types.js';
import type { RunCgroup } from './cgroups.js';
import { type ChildLike, Forker } from './forker.js';

const SCRIPT = packagePath('drivers', 'zygote.py');
/** Where the drivers a zygote can be are (warm_python.py). */
export const DRIVERS = dirname(SCRIPT);
/** The zygote's HOME: site must find no user site-packages of anyone's there. */
const HOME = '/nonexistent';
/** The addon a Node template forks itself with: built by `npm run build` where a C compiler is. */
export const NODE_FORK_ADDON = packagePath('dist', 'native', 'node_fork.node');
const NODE_TEMPLATE = packagePath('drivers', 'zygote_node.mjs');
/** Whether node runs may be forked here: the addon was built. */
export const NODE_FORKS = existsSync(NODE_FORK_ADDON);
/**
 * The nest (native/nest.c), which makes a zygote run's sandbox from a template instead of a bwrap
 * per run: built by `npm run build` where a C compiler is; undefined where it was not.
 */
export const NEST: string | undefined = ((path) => (existsSync(path) ? path : undefined))(
  packagePath('dist', 'native', 'nest'),
);

/** What the zygote needs to build a run's sandbox and confine its process (drivers/zygote.py). */
export type ZygoteSandbox = (
  | {
      /** bwrap's argv, up to the placeholder the zygote appends. */
      readonly bwrap: readonly string[];
      /** The placeholder where the zygote's own cannot run (`cat FILE -`). */
      readonly placeholder: readonly string[];
      /**
       * The same sandbox made by the nest, from a template the zygote keeps per `template` (its
       * command line): where the template cannot be made, the zygote uses `bwrap`.
       */
      readonly nest?: { readonly template: readonly string[]; readonly run: readonly string[] };
    }
  | {
      /** Sandbox mode landlock: the Landlock part of a confine script (hex) the process runs itself. */
      readonly landlock: string;
    }
) & {
  readonly uid: number;
  readonly gid: number;
  readonly env: Readonly<Record<string, string>>;
  readonly cwd: string;
  /** The program the confined process execs (with `env`), where it is no driver of the zygote's. */
  readonly exec?: readonly string[];
};

export class Zygote {
  private readonly forker: Forker;
  private idleTimer: NodeJS.Timeout | undefined;

  /**
   * The zygote of `python` with the sandbox's start-up environment `env` (its HOME aside), let go
   * after `idleMs` without a fork (started again by the next); with `node`, run by `python` to
   * fork that Node's runs.
   */
  constructor(
    python: string,
    env: NodeJS.ProcessEnv,
    private readonly idleMs: number,
    node?: string,
    /** It execs each run's argv once confined (ZygoteSandbox.exec) instead of forking a driver. */
    readonly execs = false,
  ) {
    const args = node ? [SCRIPT, '--node', node, NODE_FORK_ADDON, NODE_TEMPLATE] : [SCRIPT];
    this.forker = new Forker(python, { args, env: { ...env, HOME } });
  }

  /** false once the zygote could not start or died: runs then start their interpreter. */
  get usable(): boolean {
    return this.forker.usable;
  }

  /** Let the zygote go once the processes it forked have exited (the next fork starts it again). */
  retire(): void {
    clearTimeout(this.idleTimer);
    this.forker.retire();
  }

  /**
   * The run's process, forked into its sandbox and its cgroup, confined, its stdio connected:
   * stdin as `spec.stdin`, stdout, stderr, and fd 3 when `spec.control`.
   */
  fork(
    spec: Pick<SandboxSpec, 'stdin' | 'control'>,
    cgroup: RunCgroup,
    sandbox: ZygoteSandbox,
    seccomp: Buffer,
    ulimit: readonly string[],
  ): Promise<ChildLike> {
    this.forker.keep();
    clearTimeout(this.idleTimer);
    this.idleTimer = setTimeout(() => this.retire(), this.idleMs);
    this.idleTimer.unref();
    const slots = [spec.stdin, 'pipe', 'pipe', spec.control ? 'pipe' : 'ignore'] as const;
    return this.forker.launcher(slots, cgroup.dirs, { sandbox, ulimit, seccomp: seccomp.toString('hex') });
  }
}
