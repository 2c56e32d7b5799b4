// A started run as a SandboxedProcess: bwrap, a zygote's fork of the run's process, or a landlock
// run's program itself. Its exit and the limit that ended it, its signals, and the release of what
// was made for it (its cgroup, what its confinement held, its lent workspaces, its TMPDIR).
import { rmSync } from 'node:fs';
import { constants } from 'node:os';
import type { Duplex, Readable } from 'node:stream';
import type { Exit, LimitKind, SandboxedProcess } from '../types.js';
import { type CgroupTotals, totalLimitNote } from './cgroup-parent.js';
import type { RunCgroup } from './cgroups.js';
import type { ChildLike } from './forker.js';
import { REPORT_FD } from './launcher.js';
import type { LiveCgroups } from './live.js';
import type { Lease } from './ownership.js';
import { descendants, signal } from './process.js';

const SIGXCPU = 128 + constants.signals.SIGXCPU;
const SIGXFSZ = 128 + constants.signals.SIGXFSZ;

/** What a run was given besides its process: released once it has exited. */
export interface Prepared {
  readonly cgroup: RunCgroup | undefined;
  /** What its confinement holds for it (the namespace sandbox's copy of /etc). */
  readonly held?: { release(): void } | undefined;
  readonly lease: Lease | undefined;
  /**
   * Forked by a zygote, or confined by landlock: the run's processes are its program's alone (no
   * bwrap, no sandbox init), in its cgroup if it has one.
   */
  readonly alone: boolean;
  /** The run's own temporary directory (landlock: TMPDIR), removed with it. */
  readonly tmp?: string | undefined;
  /** Its drop program reports the program's end on REPORT_FD (`drop -r`, namespace/args.ts reportsEnd). */
  readonly report?: boolean;
}

export type Run = SandboxedProcess & { running(): boolean };

/** The run of `child` and what was made for it; `totals` names the bound of all runs together. */
export function wrapRun(
  child: ChildLike,
  prepared: Prepared,
  cgroups: LiveCgroups,
  totals: CgroupTotals | undefined,
): Run {
  const { cgroup, alone } = prepared;
  const pid = child.pid;
  const state: RunState = {
    alive: pid !== undefined && child.exitCode === null && child.signalCode === null,
    limit: undefined,
  };
  const exited = exitOf(child, prepared, state);
  const reported = prepared.report ? statusLine(child.stdio[REPORT_FD] as Readable) : undefined;
  void reported?.then((code) => {
    if (code !== undefined) state.limit ??= cgroup?.limitHit() ?? signalLimit(code);
  });
  const { stdout, stderr } = child;
  if (!stdout || !stderr) throw new Error('spawn returned no output pipes');
  let disposed: Promise<void> | undefined;
  return {
    pid,
    stdout,
    stderr,
    stdin: child.stdin,
    control: child.stdio[3] ? (child.stdio[3] as Duplex) : null,
    exited,
    ...(reported && { reported }),
    running: () => state.alive,
    kill(name) {
      if (state.alive && pid !== undefined) killMembers(pid, name, prepared);
      if (name === 'SIGKILL') cgroup?.killAll();
    },
    // The run's cgroup holds every process of it (and a cold run's bwrap).
    ...(cgroup && { stop: () => cgroup.stopAll(), holdsStopped: true }),
    limitHit: () => state.limit ?? cgroup?.limitHit(),
    limitDetail: (kind) => (totals && cgroup?.hitTotal(kind) ? totalLimitNote(kind, totals) : undefined),
    memoryMb: () => cgroup?.memoryMb(),
    cpuUsec: () => cgroup?.cpuUsec(),
    dispose() {
      disposed ??= (async () => {
        if (state.alive && pid !== undefined) signal(pid, 'SIGKILL');
        // A landlock run without a cgroup: its process group, which no process of it can leave.
        if (alone && !cgroup && pid !== undefined) signal(-pid, 'SIGKILL');
        await exited;
        await releaseRun(prepared, cgroups);
      })();
      return disposed;
    },
  };
}

/** Whether a run's first process is still there, and the limit it hit as far as known. */
interface RunState {
  alive: boolean;
  limit: LimitKind | undefined;
}

/** The run's exit, with the limit that ended it, noted in `state` as it comes. */
function exitOf(child: ChildLike, prepared: Prepared, state: RunState): Promise<Exit> {
  const { cgroup, alone } = prepared;
  return new Promise<Exit>((resolve) => {
    child.once('error', (error) => {
      state.alive = false;
      resolve({ code: null, signal: null, spawnError: error });
    });
    child.once('exit', (exitCode: number | null, sig: NodeJS.Signals | null) => {
      state.alive = false;
      // A landlock run's process is the program itself: its signal reported as bwrap reports
      // its child's (128+N), as every run of these backends ends.
      const code = sig && alone ? 128 + constants.signals[sig] : exitCode;
      const signal = sig && alone ? null : sig;
      const limit = cgroup?.limitHit() ?? signalLimit(code);
      state.limit = limit;
      resolve({ code, signal, ...(limit && { limit }) });
    });
  });
}

/** Signal every process of a live run whose first process is `pid`. */
function killMembers(pid: number, name: NodeJS.Signals, prepared: Prepared): void {
  const { cgroup, alone } = prepared;
  if (name === 'SIGKILL') signal(alone && !cgroup ? -pid : pid, name);
  // A forked (or landlock) run's cgroup holds its processes and nothing else.
  else if (alone && cgroup) for (const member of cgroup.pids()) signal(member, name);
  // A landlock run's first process is the program itself.
  else if (alone) for (const member of [pid, ...descendants(pid)]) signal(member, name);
  else {
    const members = descendants(pid);
    // bwrap has not cloned the sandbox yet: nothing to be graceful with.
    if (members.length === 0) signal(pid, name);
    for (const member of members) signal(member, name);
  }
}

/** Release what was made for a run, once its processes are gone. */
export async function releaseRun(prepared: Prepared, cgroups: LiveCgroups): Promise<void> {
  const { cgroup, held, lease, tmp } = prepared;
  held?.release();
  if (cgroup) await cgroups.release(cgroup);
  // Once its processes are gone (the cgroup drained): none can swap what is removed.
  if (tmp) rmSync(tmp, { recursive: true, force: true });
  await lease?.giveBack();
}

/** The limit an exit status names: bwrap's 128+N for the signal an rlimit sends. */
function signalLimit(code: number | null): LimitKind | undefined {
  return code === SIGXCPU ? 'cpu' : code === SIGXFSZ ? 'file_size' : undefined;
}

/** The status the drop program reports ("N\n"), then the channel is let go; undefined if none comes. */
function statusLine(channel: Readable | undefined): Promise<number | undefined> {
  if (!channel) return Promise.resolve(undefined);
  return new Promise((resolve) => {
    let text = '';
    const done = (code: number | undefined) => {
      channel.removeAllListeners('data');
      channel.destroy();
      resolve(code);
    };
    channel.on('data', (chunk: Buffer) => {
      text += chunk.toString('latin1');
      const line = /^(\d{1,3})\n/.exec(text);
      if (line) done(Number(line[1]));
      else if (text.includes('\n') || text.length > 8) done(undefined);
    });
    channel.once('end', () => done(undefined));
    channel.once('close', () => done(undefined));
  });
}
