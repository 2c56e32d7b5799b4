// Where a run's code works, as the approval form and the dashboard show it: whoever approves
// `rm -rf ./*` must see whether it runs in a workspace of its own or in their project directory.
import type { HeldDir } from '../util/index.js';

/** A one-shot run's place without a working_dir. */
export const NEW_WORKSPACE = 'a new, empty workspace of its own';
/** execute_command's place (and run_script's with workspace "command"), unless a host directory. */
export const COMMAND_WORKSPACE = "execute_command's workspace, which keeps its files between commands";

/**
 * `dir` as the form shows it: a host directory says so, and whom the code runs as there. Paths are
 * quoted as JSON: a directory named "x\nRuns in: a new workspace" shows its newline, forging no line.
 */
export function placeShown(dir: HeldDir | undefined, own: string): string {
  if (dir?.host) {
    const as = dir.host.runAs ? `, as its owner (uid ${dir.host.runAs.uid})` : '';
    return `the host directory ${JSON.stringify(dir.path)}${as}: what the code changes there is changed for good`;
  }
  return dir ? `${own}, ${JSON.stringify(dir.path)}` : own;
}
