// One parent cgroup over all of a server's runs (one-shot, sessions, warm pool, launchers): per-run
// limits alone let 45 runs of 240 MB take a 10 GB machine; this caps memory and pids of them all.
import { mkdirSync, readdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { LimitKind } from '../types.js';
import type { CgroupLayout } from './cgroups.js';

/** Memory (MB) and processes all runs together may use (CODEXEC_TOTAL_MEMORY_MB, _MAX_PROCS). */
export interface CgroupTotals {
  readonly memoryMb: number;
  readonly maxProcs: number;
}

/** The parent's name: the server's pid in it lets a later server remove what a dead one left. */
export const RUNS_PARENT = /^codexec-runs-(\d+)$/;

export interface LimitWrite {
  readonly file: string;
  readonly value: string;
  /** A knob not every kernel has (swap accounting): its failure is ignored. */
  readonly optional?: boolean;
}

/**
 * What bounds the parent, as data (in order): v1 memory+swap must stay >= memory, so memsw is
 * written before and after the memory limit (a new cgroup starts unlimited); v2 delegates the
 * controllers to the run cgroups beneath.
 */
export function totalLimitWrites(layout: CgroupLayout, totals: CgroupTotals): LimitWrite[] {
  const bytes = String(totals.memoryMb * 1024 * 1024);
  const procs = String(totals.maxProcs);
  if (layout.version === 1) {
    return [
      { file: join(layout.memory, 'memory.memsw.limit_in_bytes'), value: bytes, optional: true },
      { file: join(layout.memory, 'memory.limit_in_bytes'), value: bytes },
      { file: join(layout.memory, 'memory.memsw.limit_in_bytes'), value: bytes, optional: true },
      { file: join(layout.pids, 'pids.max'), value: procs },
    ];
  }
  return [
    { file: join(layout.memory, 'cgroup.subtree_control'), value: '+memory +pids' },
    { file: join(layout.memory, 'memory.max'), value: bytes },
    { file: join(layout.memory, 'memory.swap.max'), value: '0', optional: true },
    { file: join(layout.pids, 'pids.max'), value: procs },
  ];
}

/** The layout of the parent of `server`'s runs (`codexec-runs-<pid>` in each hierarchy). */
export function runsParentLayout(server: CgroupLayout, pid = process.pid): CgroupLayout {
  const name = `codexec-runs-${pid}`;
  return {
    version: server.version,
    memory: join(server.memory, name),
    pids: join(server.pids, name),
    ...(server.cpu && { cpu: join(server.cpu, name) }),
  };
}

/**
 * Create the parent of this server's runs under its own cgroup, bounded by `totals`, and remove
 * it at exit (with any run cgroup still in it). Throws when the cgroup tree is not writable.
 */
export function createRunsParent(server: CgroupLayout, totals: CgroupTotals): CgroupLayout {
  const parent = runsParentLayout(server);
  const dirs = [...new Set([parent.memory, parent.pids])]; // cpuacct apart: withCpu
  const made: string[] = [];
  try {
    for (const dir of dirs) {
      try {
        mkdirSync(dir);
        made.push(dir);
      } catch (error) {
        // Another backend of this process made it (tests, doctor): the same parent, bounded anew.
        if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      }
    }
    for (const write of totalLimitWrites(parent, totals)) {
      try {
        writeFileSync(write.file, write.value);
      } catch (error) {
        if (!write.optional) throw error;
      }
    }
  } catch (error) {
    for (const dir of made.reverse()) rmdirSync(dir);
    throw error;
  }
  if (made.length > 0) process.once('exit', () => removeRunsParent(dirs));
  return withCpu(parent);
}

/**
 * v1: the runs' parent in the cpuacct hierarchy too (for CODEXEC_QUOTAS' CPU seconds), where it can
 * be made; else runs go without it (no CPU counted), as they always did.
 */
function withCpu(parent: CgroupLayout): CgroupLayout {
  const { cpu, ...rest } = parent;
  if (parent.version !== 1 || cpu === undefined) return rest;
  try {
    mkdirSync(cpu);
    process.once('exit', () => removeRunsParent([cpu]));
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') return rest;
  }
  return parent;
}

/**
 * At exit: kill what is left in the run cgroups (the backend's own exit hook may come after this
 * one) and remove them and the parent; what stays busy, the next server's sweep removes.
 */
function removeRunsParent(dirs: readonly string[]): void {
  const all: string[] = [];
  for (const dir of dirs) {
    try {
      for (const child of readdirSync(dir, { withFileTypes: true }))
        if (child.isDirectory()) all.push(join(dir, child.name));
    } catch {
      // gone already
    }
  }
  removeCgroups([...all, ...dirs], 200);
}

/**
 * Kill the members of `dirs` and remove them, children listed before their parents: a member just
 * killed takes a moment to be reaped, so this tries again for up to `waitMs` (synchronously: it
 * runs at start-up and at exit).
 */
export function removeCgroups(dirs: readonly string[], waitMs: number): void {
  const left = [...dirs];
  const tick = new Int32Array(new SharedArrayBuffer(4));
  for (let waited = 0; left.length > 0 && waited <= waitMs; waited += 10) {
    for (const dir of [...left]) {
      killMembers(dir);
      try {
        rmdirSync(dir);
        left.splice(left.indexOf(dir), 1);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'ENOENT') left.splice(left.indexOf(dir), 1);
        // else members not reaped yet (or children not removed yet): again shortly
      }
    }
    if (left.length > 0) Atomics.wait(tick, 0, 0, 10);
  }
}

function killMembers(dir: string): void {
  let pids: string[];
  try {
    pids = readFileSync(join(dir, 'cgroup.procs'), 'utf8').split('\n').filter(Boolean);
  } catch {
    return;
  }
  for (const pid of pids) {
    try {
      process.kill(Number(pid), 'SIGKILL');
    } catch {
      // gone already
    }
  }
}

/** The sentence a result carries when the limit of all runs together stopped it. */
export function totalLimitNote(kind: LimitKind, totals: CgroupTotals): string | undefined {
  if (kind === 'memory')
    return `memory limit of all runs together reached (CODEXEC_TOTAL_MEMORY_MB=${totals.memoryMb}); process killed`;
  if (kind === 'processes')
    return `process limit of all runs together reached (CODEXEC_TOTAL_MAX_PROCS=${totals.maxProcs}); new processes were refused`;
  return undefined;
}
