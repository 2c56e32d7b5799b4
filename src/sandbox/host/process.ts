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

/**
 * Kill what is left of sandboxes whose bwrap monitor is gone: a sandbox's init (pid 1 of its own
 * pid namespace, our `--hostname codexec` in its argv) reparented to the host's init: a live
 * sandbox's init is always its monitor's child. One whose monitor was killed before it finished
 * building the sandbox waits forever for that monitor (an eventfd read): bwrap sets its
 * parent-death signal only later. Killing it ends its namespace. Returns how many were killed.
 */
export function killOrphanedSandboxes(): number {
  let killed = 0;
  let entries: string[];
  try {
    entries = readdirSync('/proc');
  } catch {
    return 0;
  }
  for (const name of entries) {
    if (!/^\d+$/.test(name)) continue;
    const pid = Number(name);
    try {
      const status = readFileSync(`/proc/${pid}/status`, 'utf8');
      if (!/^PPid:\s+1$/m.test(status) || !/^NSpid:\s+\d+\s+1$/m.test(status)) continue;
      const argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
      const hostname = argv.indexOf('--hostname');
      if (!argv[0]?.endsWith('bwrap') || hostname === -1 || argv[hostname + 1] !== 'codexec') continue;
      process.kill(pid, 'SIGKILL');
      killed++;
    } catch {
      // gone meanwhile, or not ours to read
    }
  }
  return killed;
}
