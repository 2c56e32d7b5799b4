// The directory a server writes its confine launcher into, in the host's temporary directory: named
// for the process that owns it (its pid namespace, pid and start time), so that a server finding
// one whose owner is gone (killed, so its exit hook never ran) removes it, and never one of a
// server still running, whichever started first. A directory it cannot judge (another uid's, a
// pid namespace it cannot see into, a name of another form) is left alone.
import { lstatSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync } from 'node:fs';
import { join } from 'node:path';

const PREFIX = 'codexec-confine-';
/** PREFIX, then `<pid namespace inode>.<pid>.<start time>-` and mkdtemp's six characters. */
const OWNED = /^codexec-confine-(\d+)\.(\d+)\.(\d+)-[A-Za-z0-9]{6}$/;

/** Make this process's launcher directory (0700) in `parent`, removing those of owners gone. */
export function makeLauncherDir(parent: string): string {
  const namespace = pidNamespace();
  const start = startTime(process.pid);
  if (!namespace || !start) return mkdtempSync(join(parent, PREFIX));
  sweepStale(parent, namespace);
  return mkdtempSync(join(parent, `${PREFIX}${namespace}.${process.pid}.${start}-`));
}

/** Remove the launcher directories in `parent` of this uid whose owner, in `namespace`, is gone. */
export function sweepStale(parent: string, namespace: string): string[] {
  let names: string[];
  try {
    names = readdirSync(parent);
  } catch {
    return [];
  }
  const uid = process.getuid?.();
  const removed: string[] = [];
  for (const name of names) {
    const match = OWNED.exec(name);
    if (!match || match[1] !== namespace) continue;
    const path = join(parent, name);
    try {
      const stats = lstatSync(path);
      if (!stats.isDirectory() || stats.uid !== uid) continue;
    } catch {
      continue;
    }
    if (startTime(Number(match[2])) === match[3]) continue; // its owner still runs
    rmSync(path, { recursive: true, force: true });
    removed.push(path);
  }
  return removed;
}

/** This process's pid namespace (its inode), or undefined when /proc cannot say. */
export function pidNamespace(): string | undefined {
  try {
    return /^pid:\[(\d+)\]$/.exec(readlinkSync('/proc/self/ns/pid'))?.[1];
  } catch {
    return undefined;
  }
}

/**
 * When process `pid` started (clock ticks after boot), or undefined when there is none: no such
 * process, or a zombie (its exit hooks will never run).
 */
function startTime(pid: number): string | undefined {
  try {
    // pid (comm) state ppid … starttime (field 22); comm may hold spaces and parentheses.
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const [state, start] = [fields[0], fields[19]];
    return start && state !== 'Z' && state !== 'X' ? start : undefined;
  } catch {
    return undefined;
  }
}
