// A sandbox backend of the mode under test (CODEXEC_TEST_SANDBOX_MODE, mode.ts), driven directly.
import { NamespaceBackend, type NamespaceOptions } from '../../src/sandbox/index.js';
import { LandlockBackend } from '../../src/sandbox/landlock/index.js';
import { SANDBOX_MODE } from './mode.js';

/** A backend of the mode under test, namespace or landlock, with the same settings either way. */
export function sandboxBackend(options: NamespaceOptions = {}): NamespaceBackend | LandlockBackend {
  return SANDBOX_MODE === 'landlock' ? new LandlockBackend(options) : new NamespaceBackend(options);
}

/** `backend` once probed: what a server does before its first run (a root landlock server claims its runs' uids then). */
export async function probed<Backend extends { probe(): Promise<unknown> }>(
  backend: Backend,
): Promise<Backend> {
  await backend.probe();
  return backend;
}

/**
 * Whether this process can make run cgroups (root, or a delegated cgroup v2 subtree): pre-started
 * launchers, the forker and cgroup limits exist only then; without, rlimits stand in.
 */
export function makesCgroups(): boolean {
  return sandboxBackend().setup().cgroups !== undefined;
}
