// Where the server's own cgroup lives (v1 or v2, from /proc/self/cgroup and mountinfo), made
// ready for per-run children; leftovers of crashed servers are swept here.
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { type CgroupTotals, createRunsParent, RUNS_PARENT, removeCgroups } from './cgroup-parent.js';
import { type CgroupLayout, createRunCgroup } from './cgroups.js';
import { alive } from './process.js';

interface Mount {
  readonly root: string;
  readonly point: string;
  readonly type: string;
  readonly options: string[];
}

/** Parse /proc/self/mountinfo and /proc/self/cgroup text into our cgroup directories. */
export function findCgroups(mountinfo: string, selfCgroup: string, v2Controllers?: (dir: string) => string) {
  const mounts: Mount[] = [];
  for (const line of mountinfo.split('\n')) {
    const [left, right] = line.split(' - ');
    if (!left || !right) continue;
    const fields = left.split(' ');
    const [type, , superOptions = ''] = right.split(' ');
    if (type !== 'cgroup' && type !== 'cgroup2') continue;
    mounts.push({ root: fields[3] ?? '/', point: fields[4] ?? '', type, options: superOptions.split(',') });
  }
  const paths = new Map<string, string>();
  for (const line of selfCgroup.split('\n')) {
    const match = /^\d+:([^:]*):(.*)$/.exec(line);
    if (!match) continue;
    const [, controllers = '', path = '/'] = match;
    if (controllers === '') paths.set('', path);
    for (const name of controllers.split(',')) if (name) paths.set(name, path);
  }
  const dirFor = (mount: Mount, path: string) => join(mount.point, relative(mount.root, path));
  const v1 = (name: string) => {
    const mount = mounts.find((m) => m.type === 'cgroup' && m.options.includes(name));
    const path = paths.get(name);
    return mount && path !== undefined ? dirFor(mount, path) : undefined;
  };
  const memory = v1('memory');
  const pids = v1('pids');
  const cpu = v1('cpuacct');
  if (memory && pids) return { version: 1, memory, pids, ...(cpu && { cpu }) } satisfies CgroupLayout;
  const unified = mounts.find((m) => m.type === 'cgroup2');
  const path = paths.get('');
  if (unified && path !== undefined) {
    const dir = dirFor(unified, path);
    const available = (v2Controllers ?? readControllers)(dir).split(/\s+/);
    if (available.includes('memory') && available.includes('pids')) {
      return { version: 2, memory: dir, pids: dir } satisfies CgroupLayout;
    }
  }
  return undefined;
}

function readControllers(dir: string): string {
  try {
    return readFileSync(join(dir, 'cgroup.controllers'), 'utf8');
  } catch {
    return '';
  }
}

/**
 * The cgroup layout runs are made in (the parent of this server's runs, bounded by `totals`), made
 * ready for children; throws with the reason when cgroup limits cannot work here. On v2 a cgroup holding processes cannot delegate controllers, so the
 * server moves itself into a leaf (`codexec-server`) first, as container runtimes do.
 */
export function prepareCgroups(totals: CgroupTotals): CgroupLayout {
  const server = findCgroups(
    readFileSync('/proc/self/mountinfo', 'utf8'),
    readFileSync('/proc/self/cgroup', 'utf8'),
  );
  if (!server) throw new Error('no cgroup hierarchy with the memory and pids controllers is mounted');
  if (server.version === 2) enableV2Controllers(server.memory);
  sweepStale(server);
  // Runs go in one parent bounded by the totals; prove we may create and remove a child there
  // before promising limits.
  const layout = createRunsParent(server, totals);
  createRunCgroup(layout, { memoryMb: 64, maxProcs: 8 }).removeNow();
  return layout;
}

/**
 * Remove the run cgroups of servers that are gone (killed before they could dispose), with whatever
 * is still in them: a dead server's run has no owner left (its helpers kill its runs as they go,
 * this is the backstop). Runs sit in their server's `codexec-runs-<pid>` parent (older servers put
 * them beside it). A member just killed takes a moment to be reaped: up to 500 ms here.
 */
function sweepStale(layout: CgroupLayout): void {
  const stale: string[] = [];
  const parents: string[] = [];
  for (const dir of new Set([layout.memory, layout.pids, ...(layout.cpu ? [layout.cpu] : [])])) {
    for (const name of children(dir)) {
      const run = /^codexec-run-(\d+)-/.exec(name)?.[1];
      if (run !== undefined && !alive(Number(run))) stale.push(join(dir, name));
      const owner = RUNS_PARENT.exec(name)?.[1];
      if (owner === undefined || alive(Number(owner))) continue;
      stale.push(...children(join(dir, name)).map((child) => join(dir, name, child)));
      parents.push(join(dir, name));
    }
  }
  removeCgroups([...stale, ...parents], 500);
}

function children(dir: string): string[] {
  try {
    return readdirSync(dir, { withFileTypes: true })
      .filter((entry) => entry.isDirectory())
      .map((entry) => entry.name);
  } catch {
    return [];
  }
}

function enableV2Controllers(dir: string): void {
  const control = join(dir, 'cgroup.subtree_control');
  const enabled = () => readFileSync(control, 'utf8').split(/\s+/);
  if (enabled().includes('memory') && enabled().includes('pids')) return;
  try {
    writeFileSync(control, '+memory +pids');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EBUSY') throw error;
    const leaf = join(dir, 'codexec-server');
    mkdirSync(leaf, { recursive: true });
    writeFileSync(join(leaf, 'cgroup.procs'), String(process.pid));
    writeFileSync(control, '+memory +pids');
  }
}
