// A run's rlimits as one table: prlimit's options (in front of bwrap, or a landlock run's script)
// and bash's ulimit flags (a launcher's), so every way a run starts sets the same limits.
import type { SandboxSpec } from '../types.js';

const MIB = 1024 * 1024;
/**
 * RLIMIT_AS only catches absurd reservations: V8 and every WebAssembly memory reserve ~10 GiB of
 * address space, so AS cannot be the memory limit. RLIMIT_DATA (private writable memory) can,
 * and is used whenever no memory cgroup is there to do it (and to report it).
 */
export const ADDRESS_SPACE_BYTES = 64 * 1024 * MIB;
export const MAX_OPEN_FILES = 1024;

export interface Rlimit {
  /** prlimit's option name. */
  readonly prlimit: string;
  /** bash's ulimit flag, and the factor from the value to ulimit's unit. */
  readonly ulimit: string;
  readonly unit: number;
  /** Bytes, seconds or a count, as prlimit takes it. */
  readonly value: number;
}

export interface RlimitOptions {
  /** Memory and pids are enforced by a cgroup (which the run starts in): no rlimit fallbacks. */
  readonly cgroup: boolean;
  /** Unprivileged uid/gid the code runs as, when the server is root. */
  readonly identity?: { readonly uid: number; readonly gid: number };
  /** Seconds of CPU time (RLIMIT_CPU, soft and hard); none for long-lived drivers. */
  readonly cpuSeconds?: number;
  /** Processes of the run's that are not the code's (the namespace sandbox's reporting drop program). */
  readonly extraProcs?: number;
}

const limit = (prlimit: string, ulimit: string, unit: number, value: number): Rlimit => ({
  prlimit,
  ulimit,
  unit,
  value,
});

/** The run's rlimits, one table for prlimit's options and bash's ulimit flags. */
export function runRlimits(spec: SandboxSpec, options: RlimitOptions): Rlimit[] {
  const { memoryMb, maxFileMb } = spec.limits;
  const limits = [
    limit('as', '-v', 1024, ADDRESS_SPACE_BYTES),
    limit('fsize', '-f', 1024, maxFileMb * MIB),
    limit('nofile', '-n', 1, MAX_OPEN_FILES),
    limit('core', '-c', 1, 0),
  ];
  if (options.cpuSeconds !== undefined) limits.push(limit('cpu', '-t', 1, options.cpuSeconds));
  if (!options.cgroup) {
    limits.push(limit('data', '-d', 1024, memoryMb * MIB));
    // Per-uid, so only meaningful for the dedicated sandbox uid of a root server.
    if (options.identity)
      limits.push(limit('nproc', '-u', 1, spec.limits.maxProcs + (options.extraProcs ?? 0)));
  }
  return limits;
}

/** The same limits as arguments to bash's ulimit (which sets soft and hard, like prlimit). */
export function ulimitArgs(limits: readonly Rlimit[]): string[] {
  return limits.flatMap((l) => [l.ulimit, String(Math.floor(l.value / l.unit))]);
}

/** RLIMIT_CPU's value, where the run has one. */
export function cpu(spec: SandboxSpec): { cpuSeconds?: number } {
  return spec.limits.cpuSeconds !== undefined ? { cpuSeconds: spec.limits.cpuSeconds } : {};
}
