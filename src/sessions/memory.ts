import { readdir, readFile } from 'node:fs/promises';

/**
 * Resident memory (MB) of `root` and all its descendants, read from /proc: one pass over
 * /proc/<pid>/stat for the parent links, then VmRSS of each process in the tree. Undefined when
 * /proc is unavailable or the process is gone.
 */
export async function treeRssMb(root: number): Promise<number | undefined> {
  let entries: string[];
  try {
    entries = await readdir('/proc');
  } catch {
    return undefined;
  }
  const children = new Map<number, number[]>();
  await Promise.all(
    entries
      .filter((name) => /^\d+$/.test(name))
      .map(async (name) => {
        const stat = await readFile(`/proc/${name}/stat`, 'utf8').catch(() => undefined);
        // The command name may contain spaces or parentheses: fields resume after the last ')'.
        const fields = stat?.slice(stat.lastIndexOf(')') + 2).split(' ');
        const ppid = Number(fields?.[1]);
        if (!Number.isInteger(ppid)) return;
        const list = children.get(ppid) ?? [];
        list.push(Number(name));
        children.set(ppid, list);
      }),
  );
  const tree: number[] = [];
  const pending = [root];
  while (pending.length > 0) {
    const pid = pending.pop() as number;
    tree.push(pid);
    pending.push(...(children.get(pid) ?? []));
  }
  let kb = 0;
  let found = false;
  for (const pid of tree) {
    const status = await readFile(`/proc/${pid}/status`, 'utf8').catch(() => undefined);
    const match = status?.match(/^VmRSS:\s+(\d+)\s+kB/m);
    if (match?.[1] !== undefined) {
      kb += Number(match[1]);
      found = true;
    }
  }
  return found ? Math.round((kb / 1024) * 10) / 10 : undefined;
}
