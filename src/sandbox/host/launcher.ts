// How a run's first process gets into its cgroup. Moving a process into a cgroup waits for an
// RCU grace period in the kernel (5-25 ms on cgroup v1), so launchers are kept ready per stdio
// shape: a process already inside a fresh run cgroup, waiting for its argv on ARGV_FD, forked by
// the forker (forker.ts) or, without a host Python, a bash spawned here. Everything it execs
// starts inside the cgroup. Without a ready launcher, bwrap is spawned directly through a shell
// that joins the run's cgroup first (startDirect), so that nothing of the sandbox is ever outside
// it: the forker and the zygote kill every run cgroup's members when the server dies.
// (A warm Python forked by the zygote joins its cgroup itself, before any code: zygote.ts.)
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import type { Writable } from 'node:stream';
import { log } from '../../util/index.js';
import type { SandboxSpec } from '../types.js';
import type { CgroupLimits, RunCgroup } from './cgroups.js';
import { childStdio } from './fds.js';
import type { ChildLike, Forker } from './forker.js';
import { signal } from './process.js';
import { ignoreStreamErrors } from './streams.js';

/**
 * Fixed child fds: 3 is the control channel (spec.control), then ours. bwrap reads the seccomp
 * program from SECCOMP_FD to its end once the sandbox is built, before it starts anything in it: a
 * direct start's server sends it only after moving bwrap into the run's cgroup, and an empty
 * program (the server gone first) makes bwrap fail instead of running the code.
 */
export const SECCOMP_FD = 4;
/** Where the drop program reads a run's end mark and reports its status (`drop -r`, namespace/drop.ts). */
export const REPORT_FD = 7;
/** The host directory's descriptor in bwrap (`--bind-fd`), on a direct start. */
export const HOST_DIR_FD = 8;
export const ARGV_FD = 6;
// The job on ARGV_FD: the number of ulimit arguments, those arguments, then the argv to exec.
const SCRIPT = `readarray -d '' -t job <&${ARGV_FD} && exec ${ARGV_FD}<&- && [ "\${#job[@]}" -gt 1 ] || exit 0
n=\${job[0]}
if [ "$n" -gt 0 ]; then ulimit "\${job[@]:1:n}" || exit 126; fi
exec "\${job[@]:n+1}"`;
/** A launcher's cgroup limits until its first run; later ones start with the last run's. */
const FIRST_LIMITS = { memoryMb: 64, maxProcs: 4 };
const LAUNCHER_ARGS = ['--norc', '--noprofile', '-c', SCRIPT, 'codexec-launcher'];

/** A run's stdio: stdin, a control channel on fd 3, the drop program's report on REPORT_FD. */
export type Shape = Pick<SandboxSpec, 'stdin' | 'control'> & { readonly report?: boolean };

export interface Started {
  readonly child: ChildLike;
  readonly cgroup?: RunCgroup;
}

/** A launcher taken for one run: set its limits, hand it the argv. */
export interface Ready {
  readonly cgroup: RunCgroup;
  /**
   * `ulimit` arguments the launcher applies before it execs `argv` (which has no prlimit); `mark`
   * goes to the drop program on REPORT_FD (a report shape's).
   */
  launch(
    argv: readonly string[],
    seccomp: Buffer,
    limits: CgroupLimits,
    ulimit: readonly string[],
    mark?: string,
  ): Started;
  /** Not launched after all: the launcher goes (its process, its cgroup). */
  discard(): void;
}

const key = (shape: Shape) => `${shape.stdin}:${shape.control === true}:${shape.report === true}`;

/** The child's fds by slot, before this process's inherited fds are mapped (childStdio). */
function slots(shape: Shape, extra: 'argv' | 'none') {
  const base: Array<'pipe' | 'ignore'> = [
    shape.stdin,
    'pipe',
    'pipe',
    shape.control ? 'pipe' : 'ignore',
    'pipe',
  ];
  if (extra === 'argv') base.push('ignore', 'pipe');
  if (shape.report) {
    while (base.length < REPORT_FD) base.push('ignore');
    base.push('pipe');
  }
  return base;
}

const stdio = (shape: Shape, extra: 'argv' | 'none') => childStdio(slots(shape, extra));

/** The host directory's descriptor at HOST_DIR_FD, where bwrap binds it (`--bind-fd`). */
function withHostDir(slots: Array<'pipe' | 'ignore' | number>, hostDirFd: number | undefined) {
  if (hostDirFd === undefined) return slots;
  while (slots.length <= HOST_DIR_FD) slots.push('ignore');
  slots[HOST_DIR_FD] = hostDirFd;
  return slots;
}

export function fd(child: ChildLike, n: number): Writable {
  return (child.stdio as unknown as Writable[])[n] as Writable;
}

/**
 * The direct start's shell: it moves itself into each of the run's cgroups (writing 0 to
 * `cgroup.procs` moves the writer), then becomes bwrap, which starts inside them: everything it
 * clones is a member from birth. It runs nothing if a move fails.
 */
const JOIN_THEN_EXEC = 'while [ "$1" != -- ]; do echo 0 >"$1" || exit 125; shift; done; shift; exec "$@"';

/**
 * Direct start: spawn the argv; with a cgroup, through a shell that joins it first (the move
 * waits for the kernel's grace period here, ~5-25 ms, where a launcher has waited ahead). Moved
 * from outside instead, a bwrap killed (or whose server died) before the move had cloned the
 * sandbox's init outside the cgroup, where no cgroup kill reached it; that init then waits forever
 * for its dead bwrap, as bwrap sets the init's parent-death signal only later.
 */
export function startDirect(
  argv: readonly string[],
  shape: Shape,
  seccomp: Buffer,
  cgroup: RunCgroup | undefined,
  mark?: string,
  hostDirFd?: number,
): Started {
  const [command, ...args] = argv as [string, ...string[]];
  const procs = cgroup?.dirs.map((dir) => join(dir, 'cgroup.procs')) ?? [];
  const [program, ...programArgs] = cgroup
    ? ['/bin/sh', '-c', JOIN_THEN_EXEC, 'join', ...procs, '--', command, ...args]
    : [command, ...args];
  const child = spawn(program as string, programArgs, {
    cwd: '/',
    env: {},
    detached: true,
    stdio: withHostDir(stdio(shape, 'none'), hostDirFd),
  });
  ignoreStreamErrors(child);
  if (mark !== undefined) fd(child, REPORT_FD).write(mark);
  fd(child, SECCOMP_FD).end(seccomp);
  return { child, ...(cgroup && { cgroup }) };
}

export interface LauncherOptions {
  /** Ready launchers are let go after this long without a request (default 5 minutes). */
  readonly idleMs?: number;
}

/** As the warm pool's default (CODEXEC_POOL_IDLE_MS). */
export const LAUNCHER_IDLE_MS = 5 * 60_000;

interface Launcher {
  readonly child: ChildLike;
  readonly cgroup: RunCgroup;
}

/**
 * Ready launchers per stdio shape, refilled in the background after each use: one for session
 * shapes, a few for one-shot runs so that concurrent runs (and warm-pool starts) find one too.
 */
export class Launchers {
  private readonly ready = new Map<string, Launcher[]>();
  private readonly starting = new Map<string, number>();

  constructor(
    private readonly bash: string,
    /** A run cgroup with these limits, which the caller removes at exit if it is still there. */
    private readonly newCgroup: (limits: CgroupLimits) => RunCgroup,
    /** Forks the launchers, so that the server does not fork itself; bash launchers without it. */
    private readonly forker?: Forker,
    private readonly options: LauncherOptions = {},
  ) {}

  private depth(shape: Shape): number {
    return shape.stdin === 'pipe' ? 1 : 4;
  }

  private idleTimer: NodeJS.Timeout | undefined;

  /** Nothing asked for a launcher in `idleMs`: the ready ones go (processes, cgroups) until the next. */
  private touch(): void {
    this.forker?.keep();
    clearTimeout(this.idleTimer);
    this.idleTimer = setTimeout(() => {
      for (const launcher of [...this.ready.values()].flat()) discard(launcher);
      this.ready.clear();
      this.forker?.retire(); // and its helper once they have exited
    }, this.options.idleMs ?? LAUNCHER_IDLE_MS);
    this.idleTimer.unref();
  }

  /**
   * The limits the last run asked for: new launchers' cgroups are made with them, so a run with
   * the same limits (all of them, but for a configuration change) writes none at launch.
   */
  private limits: CgroupLimits = FIRST_LIMITS;

  /** Runs waiting for the next launcher of a shape the forker makes (takeWithin), first come first served. */
  private readonly waiting = new Map<string, Array<(launcher: Launcher) => void>>();

  /**
   * A launcher for `shape`: one ready, else the next the forker makes, within `ms` (undefined then:
   * the caller starts directly). Under load every ready one can be taken; waiting for the next costs
   * the server nothing, where a direct start forks the whole server, and it waits for its cgroup
   * move all the same.
   */
  async takeWithin(shape: Shape, ms: number): Promise<Ready | undefined> {
    const now = this.take(shape);
    if (now || this.forker?.usable !== true) return now;
    const name = key(shape);
    const launcher = await new Promise<Launcher | undefined>((resolve) => {
      const queue = this.waiting.get(name) ?? [];
      this.waiting.set(name, queue);
      const give = (launcher: Launcher) => {
        clearTimeout(timer);
        resolve(launcher);
      };
      const timer = setTimeout(() => {
        const at = queue.indexOf(give);
        if (at !== -1) queue.splice(at, 1);
        resolve(undefined);
      }, ms);
      queue.push(give);
    });
    return launcher && this.claim(launcher);
  }

  /** A launcher for `shape` if one is ready (replacements start in the background). */
  take(shape: Shape): Ready | undefined {
    const list = this.ready.get(key(shape)) ?? [];
    let launcher = list.shift();
    while (launcher && !running(launcher)) {
      void launcher.cgroup.remove(); // died while idle
      launcher = list.shift();
    }
    setImmediate(() => this.refill(shape));
    this.touch();
    return launcher && this.claim(launcher);
  }

  private claim(launcher: Launcher): Ready {
    const { child, cgroup } = launcher;
    setRef(child, true);
    return {
      cgroup,
      launch: (argv, seccomp, limits, ulimit, mark) => {
        this.limits = limits;
        cgroup.setLimits(limits);
        fd(child, SECCOMP_FD).end(seccomp);
        if (mark !== undefined) fd(child, REPORT_FD).write(mark);
        fd(child, ARGV_FD).end(`${[String(ulimit.length), ...ulimit, ...argv].join('\0')}\0`);
        return { child, cgroup };
      },
      discard: () => discard(launcher),
    };
  }

  private refill(shape: Shape): void {
    const name = key(shape);
    // Spawning here blocks the event loop: then keep just one ready, as before the forker.
    const inForker = this.forker?.usable === true;
    const have = (this.ready.get(name)?.length ?? 0) + (this.starting.get(name) ?? 0);
    const want = inForker ? this.depth(shape) : 1;
    for (let i = have; i < want; i++) {
      this.starting.set(name, (this.starting.get(name) ?? 0) + 1);
      void this.start(shape, inForker ? this.forker : undefined).then((launcher) => {
        this.starting.set(name, (this.starting.get(name) ?? 1) - 1);
        if (!launcher) return;
        const waiter = running(launcher) ? this.waiting.get(name)?.shift() : undefined;
        if (!waiter) {
          this.ready.get(name)?.push(launcher) ?? this.ready.set(name, [launcher]);
          return;
        }
        waiter(launcher);
        this.refill(shape); // the one given away is replaced as a taken one is
      });
    }
  }

  /** One launcher in a cgroup of its own: forked by the forker, or a bash spawned here. */
  private async start(shape: Shape, forker: Forker | undefined): Promise<Launcher | undefined> {
    let cgroup: RunCgroup;
    try {
      cgroup = this.newCgroup(this.limits);
    } catch {
      return undefined; // direct starts still work; they report cgroup errors themselves
    }
    try {
      // The forker gets the slots only: it makes everything else it has close-on-exec.
      const child = forker
        ? await forker.launcher(slots(shape, 'argv'), cgroup.dirs)
        : await this.spawnBash(shape, cgroup);
      ignoreStreamErrors(child);
      // An idle launcher must not keep the process alive (`codexec run` exits after its run).
      setRef(child, false);
      return { child, cgroup };
    } catch (error) {
      log('debug', `launcher start failed: ${(error as Error).message}`);
      void cgroup.remove();
      return undefined; // direct starts still work; the next take tries again
    }
  }

  private async spawnBash(shape: Shape, cgroup: RunCgroup): Promise<ChildLike> {
    // bash sources ~/.bashrc when stdin is a socket (rshd detection) unless told not to: a
    // session-shaped launcher has a socket stdin, and this bash runs on the host, as the server.
    const child = spawn(this.bash, LAUNCHER_ARGS, {
      cwd: '/',
      env: { SHLVL: '1' },
      detached: true,
      stdio: stdio(shape, 'argv'),
    });
    child.once('error', () => {});
    ignoreStreamErrors(child);
    setRef(child, false);
    const pid = child.pid;
    try {
      if (pid === undefined) throw new Error('bash did not start');
      await cgroup.join(pid);
      return child;
    } catch (error) {
      if (pid !== undefined) signal(pid, 'SIGKILL');
      throw error;
    }
  }
}

function discard(launcher: Launcher): void {
  if (launcher.child.pid !== undefined) signal(launcher.child.pid, 'SIGKILL');
  void launcher.cgroup.remove();
}

const running = (launcher: Launcher) =>
  launcher.child.exitCode === null && launcher.child.signalCode === null;

type Refable = { ref?: () => void; unref?: () => void };

function setRef(child: ChildLike, ref: boolean): void {
  if (ref) child.ref();
  else child.unref();
  for (const stream of child.stdio as unknown as Array<Refable | null>) {
    if (ref) stream?.ref?.();
    else stream?.unref?.();
  }
}
