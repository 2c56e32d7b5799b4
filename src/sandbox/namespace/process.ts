// Signals for a sandboxed run. The outer bwrap is the host-side leader; everything else lives in
// its pid namespace and dies with the namespace's init when the leader is SIGKILLed
// (--die-with-parent). SIGTERM goes to the members instead, so code gets its grace period.
import { readdirSync, readFileSync } from 'node:fs';

/** Every descendant of `pid`, found through /proc (orphans in the pid namespace reparent to its init). */
export function descendants(pid: number): number[] {
  const children = new Map<number, number[]>();
  let entries: string[];
  try {
    entries = readdirSync('/proc');
  } catch {
    return [];
  }
  for (const name of entries) {
    if (!/^\d+$/.test(name)) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${name}/stat`, 'utf8');
    } catch {
      continue;
    }
    // pid (comm) state ppid …; comm may contain spaces and parentheses, so parse after the last ')'.
    const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
    const list = children.get(ppid) ?? [];
    list.push(Number(name));
    children.set(ppid, list);
  }
  const found: number[] = [];
  const queue = [pid];
  for (let current = queue.shift(); current !== undefined; current = queue.shift()) {
    for (const child of children.get(current) ?? []) {
      found.push(child);
      queue.push(child);
    }
  }
  return found;
}

/** Direct children of `pid`, from /proc/PID/task/TID/children when the kernel has it. */
export function children(pid: number): number[] {
  try {
    return readdirSync(`/proc/${pid}/task`).flatMap((tid) =>
      readFileSync(`/proc/${pid}/task/${tid}/children`, 'utf8').split(' ').filter(Boolean).map(Number),
    );
  } catch {
    return descendants(pid).filter((child) => parentOf(child) === pid);
  }
}

function parentOf(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
  } catch {
    return undefined;
  }
}

export function signal(pid: number, name: NodeJS.Signals): void {
  try {
    process.kill(pid, name);
  } catch {
    // ESRCH: already gone
  }
}

/** Whether a process `pid` exists (EPERM: it does, under another uid). */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}
