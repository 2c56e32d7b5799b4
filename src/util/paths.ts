import { homedir } from 'node:os';
import { isAbsolute, join, relative, resolve } from 'node:path';

/** Expand a leading `~` or `~/` to the user's home directory and make the path absolute. */
export function expandHome(path: string, home = homedir()): string {
  if (path === '~') return home;
  if (path.startsWith('~/')) return join(home, path.slice(2));
  return resolve(path);
}

/** True when `child` is `parent` itself or lies beneath it (both absolute, normalized). */
export function isWithin(child: string, parent: string): boolean {
  const rel = relative(parent, child);
  return rel === '' || (!rel.startsWith('..') && !isAbsolute(rel));
}
