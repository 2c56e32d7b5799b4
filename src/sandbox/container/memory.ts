// What a waiting container costs the host, for the warm pool's budget (CODEXEC_POOL_MEMORY_MB):
// its engine CLI's own memory (anonymous: the binary's pages are shared by every CLI, ~28 MB of
// podman's ~38 MB here) and what its memory cgroup is charged (the driver, its tmpfs).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { cgroupPaths, ROOT } from './limits.js';

const MIB = 1024 * 1024;

/** In MB; undefined until the container's cgroup can be read (its driver has not connected yet). */
export function containerMemoryMb(
  cliPid: number | undefined,
  cgroups: string | undefined,
  root = ROOT,
): number | undefined {
  const charged = cgroups === undefined ? undefined : cgroupBytes(cgroupPaths(cgroups), root);
  if (charged === undefined) return undefined;
  return (charged + (cliPid === undefined ? 0 : anonymousBytes(cliPid))) / MIB;
}

function cgroupBytes(paths: Map<string, string>, root: string): number | undefined {
  const memory = paths.get('memory');
  const unified = paths.get('');
  const file = memory
    ? join(root, 'memory', memory, 'memory.usage_in_bytes')
    : unified && join(root, unified, 'memory.current');
  if (!file) return undefined;
  try {
    const bytes = Number(readFileSync(file, 'utf8'));
    return Number.isFinite(bytes) ? bytes : undefined;
  } catch {
    return undefined; // gone, or not ours to read
  }
}

function anonymousBytes(pid: number): number {
  try {
    const match = /RssAnon:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return Number(match?.[1] ?? 0) * 1024;
  } catch {
    return 0; // the CLI has exited
  }
}
