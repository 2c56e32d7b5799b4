// File descriptors the server inherited without close-on-exec (from whatever started it) would
// pass through bwrap into the code. They are found here and replaced by /dev/null in the child.
import { openSync, readdirSync, readFileSync } from 'node:fs';

const O_CLOEXEC = 0o2000000;

/** Our fds >= 3 that an exec would keep open. */
export function inheritableFds(): number[] {
  const found: number[] = [];
  let names: string[];
  try {
    names = readdirSync('/proc/self/fdinfo');
  } catch {
    return found;
  }
  for (const name of names) {
    const fd = Number(name);
    if (!(fd >= 3)) continue;
    try {
      const flags = /^flags:\s+([0-7]+)/m.exec(readFileSync(`/proc/self/fdinfo/${name}`, 'utf8'));
      if (flags?.[1] !== undefined && (Number.parseInt(flags[1], 8) & O_CLOEXEC) === 0) found.push(fd);
    } catch {
      // closed while we looked (the fd of readdir itself)
    }
  }
  return found;
}

let devNull: number | undefined;
let inherited: number[] | undefined;

/**
 * The child's stdio array: `ours` at their indices, and every other inheritable fd of this process
 * pointed at /dev/null so the code never receives it.
 */
export function childStdio(
  ours: ReadonlyArray<'pipe' | 'ignore' | number>,
): Array<'pipe' | 'ignore' | number> {
  const stdio = [...ours];
  // Computed once: fds inherited at start-up stay; everything Node opens later is close-on-exec.
  inherited ??= inheritableFds();
  const leaked = inherited;
  if (leaked.length === 0) return stdio;
  devNull ??= openSync('/dev/null', 'r');
  for (const fd of leaked) {
    if (fd === devNull) continue;
    while (stdio.length <= fd) stdio.push('ignore');
    if (stdio[fd] === 'ignore') stdio[fd] = devNull;
  }
  return stdio;
}
