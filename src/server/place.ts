// Where a run's code works, as the approval form and the dashboard show it: whoever approves
// `rm -rf ./*` must see whether it runs in a workspace of its own or in their project directory.
import { quotedPath, type Root } from '../util/index.js';

/** A one-shot run's place without a working_dir. */
export const NEW_WORKSPACE = 'a new, empty workspace of its own';
/** execute_command's place (and run_script's with workspace "command"), unless a host directory. */
export const COMMAND_WORKSPACE = "execute_command's workspace, which keeps its files between commands";

/**
 * `dir` as the form shows it: a host directory says so, and whom the code runs as there. Paths are
 * quoted and shown as every name is (util/names): a directory named "x\nRuns in: a new workspace"
 * shows its newline, forging no line, and a bidi override shows as \u202e, reversing nothing.
 */
export function placeShown(dir: Root | undefined, own: string): string {
  if (typeof dir === 'string') return `${own}, ${quotedPath(dir)}`;
  if (dir?.host) {
    const as = dir.host.runAs ? `, as its owner (uid ${dir.host.runAs.uid})` : '';
    return `the host directory ${quotedPath(dir.path)}${as}: what the code changes there is changed for good`;
  }
  return dir ? `${own}, ${quotedPath(dir.path)}` : own;
}
