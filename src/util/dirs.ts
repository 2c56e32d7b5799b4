import { type Dir, opendirSync } from 'node:fs';

/**
 * Whether `dir` holds nothing but `names` (a workspace after a run that left no files). Reads at
 * most names.size + 1 entries synchronously — µs, where a walk through the thread pool costs
 * ~0.5 ms — so a huge directory costs no more than a small one.
 */
export function holdsOnly(dir: string, names: ReadonlySet<string>): boolean {
  let handle: Dir;
  try {
    handle = opendirSync(dir);
  } catch {
    return false; // let the walk say what is there
  }
  try {
    for (let i = 0; i <= names.size; i++) {
      const entry = handle.readSync();
      if (entry === null) return true;
      if (!names.has(entry.name)) return false;
    }
    return false;
  } finally {
    handle.closeSync();
  }
}
