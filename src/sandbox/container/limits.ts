// Which cgroup limit a container hit, read on the host while it runs: its launcher names its
// cgroups (/proc/self/cgroup from inside, control.ts). A warm run ends at its driver's report,
// before the wrapper in the container could leave its note (container_init.sh).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { LimitKind } from '../types.js';

export const ROOT = '/sys/fs/cgroup';

/**
 * The host directories of `header`'s cgroups (/proc/self/cgroup lines joined by ";"), by controller
 * ('' for v2's unified one). cgroup v2 seen from a private cgroup namespace is "/": left out, as
 * there is nothing on the host to read then.
 */
export function cgroupPaths(header: string): Map<string, string> {
  const paths = new Map<string, string>();
  for (const line of header.split(';')) {
    const match = /^\d+:([^:]*):(\/.*)$/.exec(line);
    // Written in the container (the wrapper's file lies in the workspace): never a path upward.
    if (!match?.[2] || match[2].split('/').includes('..')) continue;
    for (const controller of (match[1] ?? '').split(',')) paths.set(controller, match[2]);
  }
  if (paths.get('') === '/') paths.delete('');
  return paths;
}

/** The counters to read for `header` (/proc/self/cgroup lines joined by ";"), under `root`. */
export function limitCounters(
  header: string,
  root = ROOT,
): Array<{ file: string; key: string; limit: LimitKind }> {
  const paths = cgroupPaths(header);
  const memory = paths.get('memory');
  const pids = paths.get('pids');
  const unified = paths.get('');
  return [
    ...(memory
      ? [
          {
            file: join(root, 'memory', memory, 'memory.oom_control'),
            key: 'oom_kill',
            limit: 'memory' as const,
          },
        ]
      : []),
    ...(pids
      ? [{ file: join(root, 'pids', pids, 'pids.events'), key: 'max', limit: 'processes' as const }]
      : []),
    ...(unified
      ? [
          { file: join(root, unified, 'memory.events'), key: 'oom_kill', limit: 'memory' as const },
          { file: join(root, unified, 'pids.events'), key: 'max', limit: 'processes' as const },
        ]
      : []),
  ];
}

/**
 * The first limit whose counter is above zero (a container's cgroup is its run's alone); null when
 * none is and a counter could not be read: the container's cgroups are gone or going (its runtime
 * removes them, one controller after another, once its last process has ended), or one of them is
 * not there to read (cgroup v2's files on a host whose controllers are v1's).
 */
export function limitHit(header: string | undefined, root = ROOT): LimitKind | null | undefined {
  if (!header) return undefined;
  let unread = false;
  for (const { file, key, limit } of limitCounters(header, root)) {
    try {
      const line = readFileSync(file, 'utf8')
        .split('\n')
        .find((l) => l.startsWith(`${key} `));
      if (line && Number(line.slice(key.length + 1)) > 0) return limit;
    } catch {
      unread = true;
    }
  }
  return unread ? null : undefined;
}
