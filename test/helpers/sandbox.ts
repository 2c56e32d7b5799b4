// A sandbox backend of the mode under test (CODEXEC_TEST_SANDBOX_MODE, mode.ts), driven directly.
import { NamespaceBackend } from '../../src/sandbox/index.js';
import type { NamespaceOptions } from '../../src/sandbox/namespace/index.js';
import { SANDBOX_MODE } from './mode.js';

/** A backend of the mode under test (the landlock backend is a NamespaceBackend that confines so). */
export function sandboxBackend(options: NamespaceOptions = {}): NamespaceBackend {
  return new NamespaceBackend({ ...options, ...(SANDBOX_MODE === 'landlock' && { confine: 'landlock' }) });
}

/**
 * Whether this process can make run cgroups (root, or a delegated cgroup v2 subtree): pre-started
 * launchers, the forker and cgroup limits exist only then; without, rlimits stand in.
 */
export function makesCgroups(): boolean {
  return sandboxBackend().setup().cgroups !== undefined;
}
