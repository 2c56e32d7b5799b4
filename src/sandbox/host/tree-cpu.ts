// The CPU a run's processes used where no cgroup counts it (subprocess mode; namespace and landlock
// without writable cgroups), for CODEXEC_QUOTAS' cpu_seconds_per_day.
//
// Sampling /proc while the run goes, not an exit report (getrusage(RUSAGE_CHILDREN) from a wrapper):
// one piece of code for every backend whose processes the host sees, none in the launchers, and it
// counts a session's send as well as a one-shot run (a send ends with no process exiting). The cost
// is an undercount: a process's CPU since its last sample (at most SAMPLE_MS of it) is lost when it
// exits, and one that lives less than SAMPLE_MS may not be seen at all. Nothing is sampled unless the
// caller meters (a principal with a CPU budget): a run without one costs nothing.
import { readdirSync, readFileSync } from 'node:fs';
import { cpuBetween, metering } from '../../util/index.js';
import type { SandboxedProcess } from '../types.js';

/** How often the tree is sampled while a metered run goes. */
export const SAMPLE_MS = 100;
/** /proc/<pid>/stat counts CPU in USER_HZ ticks, 1/100 s on every Linux architecture. */
const TICK_USEC = 10_000;

interface Stat {
  readonly ppid: number;
  readonly pgrp: number;
  readonly session: number;
  /** utime + stime, in ticks. */
  readonly ticks: number;
  /** Its start time: a pid reused by another process is another key. */
  readonly start: string;
}

function readStat(pid: string): Stat | undefined {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return undefined; // gone, or never ours to see
  }
  // The command name may hold spaces and parentheses: the fields follow its last ")".
  const field = text.slice(text.lastIndexOf(')') + 2).split(' ');
  const at = (n: number) => Number(field[n - 3]);
  return {
    ppid: at(4),
    pgrp: at(5),
    session: at(6),
    ticks: at(14) + at(15),
    start: field[22 - 3] ?? '',
  };
}

/**
 * The CPU ticks of every process of `root`'s tree now, by pid and start time: its descendants, and
 * the orphans that kept its process group or session (subprocess mode: re-parented to init).
 */
export function sampleTree(root: number): Map<string, number> {
  const stats = new Map<number, Stat>();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const stat = readStat(name);
    if (stat) stats.set(Number(name), stat);
  }
  const children = new Map<number, number[]>();
  for (const [pid, { ppid }] of stats) children.set(ppid, [...(children.get(ppid) ?? []), pid]);
  const inTree = new Set<number>();
  const queue = [
    root,
    ...[...stats].filter(([, s]) => s.pgrp === root || s.session === root).map(([pid]) => pid),
  ];
  for (let pid = queue.pop(); pid !== undefined; pid = queue.pop()) {
    if (inTree.has(pid) || !stats.has(pid)) continue;
    inTree.add(pid);
    queue.push(...(children.get(pid) ?? []));
  }
  const ticks = new Map<string, number>();
  for (const pid of inTree) {
    const stat = stats.get(pid) as Stat;
    ticks.set(`${pid}:${stat.start}`, stat.ticks);
  }
  return ticks;
}

/** A tree's CPU from now on: sampled every SAMPLE_MS until stop(), or until the tree is gone. */
export class TreeCpu {
  private readonly base: Map<string, number>;
  private readonly last = new Map<string, number>();
  private readonly timer: NodeJS.Timeout;

  constructor(private readonly root: number) {
    this.base = sampleTree(root);
    this.timer = setInterval(() => this.take(), SAMPLE_MS).unref();
  }

  /** Stop sampling; the CPU, in µs, the tree used since it started being counted. */
  stop(): number {
    this.take();
    clearInterval(this.timer);
    let ticks = 0;
    for (const [key, now] of this.last) ticks += Math.max(0, now - (this.base.get(key) ?? 0));
    return ticks * TICK_USEC;
  }

  private take(): void {
    const seen = sampleTree(this.root);
    if (seen.size === 0) clearInterval(this.timer); // the run is over: its last samples stand
    for (const [key, ticks] of seen) this.last.set(key, ticks);
  }
}

/**
 * Start counting what `proc` uses from now on; call the result once, at the end, for the µs used
 * (undefined: nothing counts it). Its cgroup's counter where it has one; else, when what runs now
 * is metered (a principal with a CPU budget), its process tree, where `pid` is the sandbox's first
 * process (not a container engine's CLI, which relays the output).
 */
export function countCpu(proc: SandboxedProcess): () => number | undefined {
  const before = proc.cpuUsec?.();
  if (before !== undefined) return () => cpuBetween(before, proc.cpuUsec?.());
  if (!metering()) return () => undefined;
  // A counter the backend finds only later (a gVisor container's host cgroup, asked of the engine):
  // from its first reading on, what the run used before it is not counted.
  if (proc.relaysOutput && proc.cpuUsec) return sampled(proc.cpuUsec.bind(proc));
  if (proc.pid === undefined || proc.relaysOutput) return () => undefined;
  const tree = new TreeCpu(proc.pid);
  return () => tree.stop();
}

function sampled(read: () => number | undefined): () => number | undefined {
  let first: number | undefined;
  let last: number | undefined;
  const take = () => {
    last = read() ?? last;
    first ??= last;
  };
  const timer = setInterval(take, SAMPLE_MS).unref();
  return () => {
    take();
    clearInterval(timer);
    return cpuBetween(first, last);
  };
}
