// How a run's first process gets into its cgroup. Moving a process into a cgroup waits for an
// RCU grace period in the kernel (5-25 ms on cgroup v1), so each stdio shape keeps one launcher
// ready: a bash already inside a fresh run cgroup, waiting for its argv on ARGV_FD. Everything it
// execs starts inside the cgroup. Without a ready launcher, bwrap is spawned directly and held on
// --block-fd until the server has moved it in (the grace period then overlaps bwrap's setup).
import { type ChildProcess, spawn } from 'node:child_process';
import type { Writable } from 'node:stream';
import { childStdio } from '../fds.js';
import { ignoreStreamErrors } from '../streams.js';
import type { SandboxSpec } from '../types.js';
import { SECCOMP_FD, WAIT_FD } from './args.js';
import { type CgroupLayout, type CgroupLimits, createRunCgroup, type RunCgroup } from './cgroups.js';
import { children, signal } from './process.js';

export const ARGV_FD = 6;
const SCRIPT = `readarray -d '' -t argv <&${ARGV_FD} && exec ${ARGV_FD}<&- && exec "\${argv[@]}"`;
const IDLE_LIMITS = { memoryMb: 64, maxProcs: 4 };

type Shape = Pick<SandboxSpec, 'stdin' | 'control'>;

export interface Started {
  readonly child: ChildProcess;
  readonly cgroup?: RunCgroup;
  /** The cgroup join, when it is still under way (direct start); rejects if it failed. */
  readonly joined: Promise<void>;
}

/** A launcher taken for one run: set its limits, hand it the argv. */
export interface Ready {
  readonly cgroup: RunCgroup;
  launch(argv: readonly string[], seccomp: Buffer, limits: CgroupLimits): Started;
}

const key = (shape: Shape) => `${shape.stdin}:${shape.control === true}`;

function stdio(shape: Shape, extra: 'wait' | 'argv' | 'none') {
  const base: Array<'pipe' | 'ignore'> = [
    shape.stdin,
    'pipe',
    'pipe',
    shape.control ? 'pipe' : 'ignore',
    'pipe',
  ];
  if (extra === 'wait') base.push('pipe');
  if (extra === 'argv') base.push('ignore', 'pipe');
  return childStdio(base);
}

export function fd(child: ChildProcess, n: number): Writable {
  return (child.stdio as unknown as Writable[])[n] as Writable;
}

/** Direct start: spawn the argv; with a cgroup, bwrap waits on WAIT_FD until it has been moved in. */
export function startDirect(
  argv: readonly string[],
  shape: Shape,
  seccomp: Buffer,
  cgroup: RunCgroup | undefined,
): Started {
  const [command, ...args] = argv as [string, ...string[]];
  const child = spawn(command, args, {
    cwd: '/',
    env: {},
    detached: true,
    stdio: stdio(shape, cgroup ? 'wait' : 'none'),
  });
  ignoreStreamErrors(child);
  fd(child, SECCOMP_FD).end(seccomp);
  const pid = child.pid;
  if (!cgroup || pid === undefined) return { child, ...(cgroup && { cgroup }), joined: Promise.resolve() };
  const joined = joinTree(cgroup, pid).then(() => {
    fd(child, WAIT_FD).end('\n');
  });
  // Never start unconfined: without the byte on WAIT_FD bwrap runs nothing.
  joined.catch(() => fd(child, WAIT_FD).destroy());
  return { child, cgroup, joined };
}

/** Move bwrap and whatever it cloned before the move (it then blocks) into the cgroup. */
async function joinTree(cgroup: RunCgroup, leader: number): Promise<void> {
  const moved = new Set<number>();
  for (let pending = [leader]; pending.length > 0; ) {
    for (const pid of pending) {
      await cgroup.join(pid);
      moved.add(pid);
    }
    pending = [...moved].flatMap(children).filter((pid) => !moved.has(pid));
  }
}

/** One ready launcher per stdio shape, refilled in the background after each use. */
export class Launchers {
  private readonly ready = new Map<string, { child: ChildProcess; cgroup: RunCgroup }>();
  private readonly starting = new Set<string>();

  constructor(
    private readonly bash: string,
    private readonly layout: CgroupLayout,
    private readonly track: (cgroup: RunCgroup) => void,
  ) {}

  /** A launcher for `shape` if one is ready (the next one starts in the background). */
  take(shape: Shape): Ready | undefined {
    const name = key(shape);
    const launcher = this.ready.get(name);
    this.ready.delete(name);
    setImmediate(() => this.refill(shape));
    if (!launcher || launcher.child.exitCode !== null || launcher.child.signalCode !== null) return undefined;
    const { child, cgroup } = launcher;
    setRef(child, true);
    return {
      cgroup,
      launch(argv, seccomp, limits) {
        cgroup.setLimits(limits);
        fd(child, SECCOMP_FD).end(seccomp);
        fd(child, ARGV_FD).end(`${argv.join('\0')}\0`);
        return { child, cgroup, joined: Promise.resolve() };
      },
    };
  }

  private refill(shape: Shape): void {
    const name = key(shape);
    if (this.ready.has(name) || this.starting.has(name)) return;
    this.starting.add(name);
    let cgroup: RunCgroup;
    try {
      cgroup = createRunCgroup(this.layout, IDLE_LIMITS);
    } catch {
      this.starting.delete(name);
      return; // direct starts still work; they report cgroup errors themselves
    }
    this.track(cgroup);
    // bash sources ~/.bashrc when stdin is a socket (rshd detection) unless told not to: a
    // session-shaped launcher has a socket stdin, and this bash runs on the host, as the server.
    const child = spawn(this.bash, ['--norc', '--noprofile', '-c', SCRIPT, 'codexec-launcher'], {
      cwd: '/',
      env: { SHLVL: '1' },
      detached: true,
      stdio: stdio(shape, 'argv'),
    });
    child.once('error', () => {});
    ignoreStreamErrors(child);
    // An idle launcher must not keep the process alive (`codexec run` exits after its run).
    setRef(child, false);
    const pid = child.pid;
    const fail = () => {
      this.starting.delete(name);
      if (pid !== undefined) signal(pid, 'SIGKILL');
      void cgroup.remove();
    };
    if (pid === undefined) {
      fail();
      return;
    }
    cgroup.join(pid).then(() => {
      this.starting.delete(name);
      this.ready.set(name, { child, cgroup });
    }, fail);
  }
}

type Refable = { ref?: () => void; unref?: () => void };

function setRef(child: ChildProcess, ref: boolean): void {
  if (ref) child.ref();
  else child.unref();
  for (const stream of child.stdio as unknown as Array<Refable | null>) {
    if (ref) stream?.ref?.();
    else stream?.unref?.();
  }
}
