// Per-run cgroups for memory and process-count limits, on cgroup v1 and v2. The run's cgroup is
// created under the server's own cgroup (read from /proc/self/cgroup) and removed in dispose().
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { LimitKind } from '../types.js';

/** Where our cgroup lives for each controller (v2: one directory holds both). */
export interface CgroupLayout {
  readonly version: 1 | 2;
  readonly memory: string;
  readonly pids: string;
}

export interface CgroupLimits {
  readonly memoryMb: number;
  readonly maxProcs: number;
}

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
  if (memory && pids) return { version: 1, memory, pids } satisfies CgroupLayout;
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
 * This process's cgroup layout, made ready for children; throws with the reason when cgroup
 * limits cannot work here. On v2 a cgroup holding processes cannot delegate controllers, so the
 * server moves itself into a leaf (`codexec-server`) first, as container runtimes do.
 */
export function prepareCgroups(): CgroupLayout {
  const layout = findCgroups(
    readFileSync('/proc/self/mountinfo', 'utf8'),
    readFileSync('/proc/self/cgroup', 'utf8'),
  );
  if (!layout) throw new Error('no cgroup hierarchy with the memory and pids controllers is mounted');
  if (layout.version === 2) enableV2Controllers(layout.memory);
  // Prove we may create and remove a child before promising limits.
  createRunCgroup(layout, { memoryMb: 64, maxProcs: 8 }).removeNow();
  return layout;
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

/** One run's cgroup(s): limits written, processes joined by pid, removed when empty. */
export class RunCgroup {
  private removed = false;

  constructor(
    private readonly layout: CgroupLayout,
    private readonly dirs: readonly string[],
  ) {}

  /**
   * Move `pid` in. Async on purpose: the first migration waits for an RCU grace period in the
   * kernel (5-25 ms on cgroup v1), which must not stall the server's event loop.
   */
  async join(pid: number): Promise<void> {
    for (const dir of this.dirs) await writeFile(join(dir, 'cgroup.procs'), String(pid));
  }

  pids(): number[] {
    const dir = this.dirs[0];
    if (!dir) return [];
    try {
      return readFileSync(join(dir, 'cgroup.procs'), 'utf8').split('\n').filter(Boolean).map(Number);
    } catch {
      return [];
    }
  }

  killAll(): void {
    const killFile = join(this.dirs[0] ?? '', 'cgroup.kill');
    if (this.layout.version === 2 && existsSync(killFile)) {
      writeIgnoringErrors(killFile, '1');
      return;
    }
    for (const pid of this.pids()) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
  }

  /** Which cgroup limit stopped something in this run, if any. */
  limitHit(): LimitKind | undefined {
    const [memoryDir, pidsDir = memoryDir] = this.dirs;
    if (!memoryDir || !pidsDir) return undefined;
    const memoryEvents = this.layout.version === 1 ? 'memory.oom_control' : 'memory.events';
    if (counter(join(memoryDir, memoryEvents), 'oom_kill') > 0) return 'memory';
    if (counter(join(pidsDir, 'pids.events'), 'max') > 0) return 'processes';
    return undefined;
  }

  /** Remove the cgroup(s) once the kernel has reaped every member (waits up to `ms`). */
  async remove(ms = 3000): Promise<void> {
    const deadline = Date.now() + ms;
    // Members of a dead pid namespace take a moment to be reaped: poll fast, then back off.
    for (let wait = 1; this.pids().length > 0 && Date.now() < deadline; wait = Math.min(wait * 2, 50)) {
      this.killAll();
      await sleep(wait);
    }
    this.removeNow();
  }

  removeNow(): void {
    if (this.removed) return;
    this.removed = true;
    // v1 pids before memory is irrelevant; each hierarchy holds its own directory.
    for (const dir of this.dirs) rmdirSync(dir);
  }
}

export function createRunCgroup(layout: CgroupLayout, limits: CgroupLimits): RunCgroup {
  const name = `codexec-run-${randomBytes(6).toString('hex')}`;
  const bytes = String(limits.memoryMb * 1024 * 1024);
  const dirs =
    layout.version === 1 ? [join(layout.memory, name), join(layout.pids, name)] : [join(layout.memory, name)];
  const made: string[] = [];
  try {
    for (const dir of dirs) {
      mkdirSync(dir);
      made.push(dir);
    }
    const [memoryDir = '', pidsDir = memoryDir] = dirs;
    if (layout.version === 1) {
      writeFileSync(join(memoryDir, 'memory.limit_in_bytes'), bytes);
      // With swap accounting, also cap memory+swap so the limit cannot be dodged by swapping.
      writeIgnoringErrors(join(memoryDir, 'memory.memsw.limit_in_bytes'), bytes);
    } else {
      writeFileSync(join(memoryDir, 'memory.max'), bytes);
      writeIgnoringErrors(join(memoryDir, 'memory.swap.max'), '0');
    }
    writeFileSync(join(pidsDir, 'pids.max'), String(limits.maxProcs));
  } catch (error) {
    for (const dir of made) rmdirSync(dir);
    throw error;
  }
  return new RunCgroup(layout, dirs);
}

function counter(file: string, key: string): number {
  try {
    const line = readFileSync(file, 'utf8')
      .split('\n')
      .find((l) => l.startsWith(`${key} `));
    return line ? Number(line.slice(key.length + 1)) || 0 : 0;
  } catch {
    return 0;
  }
}

function writeIgnoringErrors(file: string, value: string): void {
  try {
    writeFileSync(file, value);
  } catch {
    // optional knob (no swap accounting, older kernel): the main limit still applies
  }
}
