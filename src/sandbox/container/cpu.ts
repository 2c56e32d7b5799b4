// The CPU a container's processes used, for CODEXEC_QUOTAS: its cgroup's counter read on the host
// (v2 cpu.stat usage_usec, v1 cpuacct.usage). Under gVisor the host cgroup is the sandbox's, which
// counts the CPU of every process in it.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { cgroupPaths, ROOT } from './limits.js';

/** The µs counted so far in the cgroups `header` names, undefined if none can be read (gone). */
export function cgroupCpuUsec(header: string | undefined): number | undefined {
  if (!header) return undefined;
  const paths = cgroupPaths(header);
  const unified = paths.get('');
  const cpuacct = paths.get('cpuacct');
  // Each where it may be: a hybrid host names a v2 cgroup too, with no cpu.stat where v1 is mounted.
  return (
    (unified === undefined ? undefined : v2Usec(join(ROOT, unified, 'cpu.stat'))) ??
    (cpuacct === undefined ? undefined : v1Usec(join(ROOT, 'cpuacct', cpuacct, 'cpuacct.usage')))
  );
}

function v2Usec(file: string): number | undefined {
  const line = readQuietly(file)
    ?.split('\n')
    .find((l) => l.startsWith('usage_usec '));
  return line ? Number(line.slice('usage_usec '.length)) : undefined;
}

function v1Usec(file: string): number | undefined {
  const ns = readQuietly(file);
  return ns ? Math.floor(Number(ns) / 1000) : undefined;
}

function readQuietly(file: string): string | undefined {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return undefined; // gone (the container ended) or not ours to read
  }
}

/**
 * A container's CPU counter, kept past its end: a container of its own removes its cgroup as it
 * exits, before the server reads it at the run's end, so while a metered run goes (`sample`) it is
 * read every `everyMs` and the last reading stands (at most `everyMs` of the run's CPU is lost). A
 * container of its own (`fresh`) has used nothing before its cgroup is known: 0 then.
 */
export class ContainerCpu {
  private seen: number | undefined;
  private readonly timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly cgroups: () => string | undefined,
    private readonly fresh: boolean,
    sample: boolean,
    everyMs: number,
  ) {
    this.timer = sample ? setInterval(() => this.read(), everyMs).unref() : undefined;
  }

  /** The counter now, or its last reading once the cgroup is gone. */
  read(): number | undefined {
    const now = cgroupCpuUsec(this.cgroups());
    if (now !== undefined) this.seen = now;
    return this.seen ?? (this.fresh ? 0 : undefined);
  }

  /** Take a last reading and stop sampling (the container has exited or is being removed). */
  end(): void {
    this.read();
    clearInterval(this.timer);
  }
}
