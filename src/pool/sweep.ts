// Workspaces a killed server left behind: its pre-started ones, its runs' and its sessions'. A
// server that ends normally removes them itself; one killed with SIGKILL cannot, so the next one
// (on the same CODEXEC_HOME) removes those no live process uses.
import { readdirSync, readFileSync, readlinkSync, statSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { TMP_PREFIX } from '../sandbox/index.js';

/**
 * Younger than this, a workspace may belong to a live server that has made it and not yet started
 * its process (another server on the same home): left for a later sweep.
 */
export const SWEEP_MIN_AGE_MS = 5_000;
/**
 * A run leaves its code file when it is killed, and in landlock mode its own TMPDIR (TMP_PREFIX,
 * removed with a run that ends); anything else beside them is the run's output, kept.
 */
const leftByRun = (entry: string) => /^_codexec_script\./.test(entry) || entry.startsWith(TMP_PREFIX);

export interface SweepResult {
  readonly removed: readonly string[];
  /** Left for now only because they were too young to tell. */
  readonly young: number;
}

/**
 * Remove from `sandboxDir` the workspaces no live process uses (none has it as its working
 * directory or names it in its argv, as bwrap does for its binds, or its environment): a run's (`exec_*`) when it holds
 * nothing but its code file, as a finished run's is removed, and a session's (`sess_*`), which
 * only lived as long as its server.
 */
export async function sweepWorkspaces(sandboxDir: string, now = Date.now()): Promise<SweepResult> {
  let names: string[];
  try {
    names = readdirSync(sandboxDir).filter((name) => /^(exec|sess)_[0-9a-f]{12}$/.test(name));
  } catch {
    return { removed: [], young: 0 };
  }
  if (names.length === 0) return { removed: [], young: 0 };
  const used = referencedPaths();
  const removed: string[] = [];
  let young = 0;
  for (const name of names) {
    const dir = join(sandboxDir, name);
    try {
      if (now - statSync(dir).ctimeMs < SWEEP_MIN_AGE_MS) {
        young++;
        continue;
      }
      if (namedByAny(used, dir)) continue;
      if (name.startsWith('exec_') && !readdirSync(dir).every(leftByRun)) continue;
      await rm(dir, { recursive: true, force: true });
      removed.push(dir);
    } catch {
      // gone meanwhile, or unreadable: not ours to judge
    }
  }
  return { removed, young };
}

/**
 * Whether any of `texts` (referencedPaths) names the workspace `dir`, wherever in the text: after a
 * `--volume` it is followed by `:` (a container engine's command line), in a bwrap bind by a NUL,
 * in a working directory by `/`. Workspace names are of fixed length: no other one has it as prefix.
 */
export function namedByAny(texts: readonly string[], dir: string): boolean {
  return texts.some((text) => text.includes(dir));
}

/**
 * What every live process names: its argv, its environment (a session's package paths) and its
 * working directory, as one text each (ids are of fixed length: a match is the workspace's).
 */
export function referencedPaths(): string[] {
  const texts: string[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    for (const read of [
      () => readFileSync(`/proc/${entry}/cmdline`, 'utf8'),
      () => readFileSync(`/proc/${entry}/environ`, 'utf8'),
      () => `${readlinkSync(`/proc/${entry}/cwd`)}/`,
    ]) {
      try {
        texts.push(read());
      } catch {
        // exited while we looked, or not ours to read
      }
    }
  }
  return texts;
}
