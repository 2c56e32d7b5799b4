// The confining sandbox mode the suites run in, and what they may expect of the user running them.
// CODEXEC_TEST_SANDBOX_MODE (namespace by default, or landlock) switches every suite at once.
import { isRunUid } from '../../src/sandbox/landlock/uids.js';

export type ConfinedMode = 'namespace' | 'landlock';

function confinedMode(value: string | undefined): ConfinedMode {
  if (value === undefined || value === '' || value === 'namespace') return 'namespace';
  if (value === 'landlock') return 'landlock';
  throw new Error(`CODEXEC_TEST_SANDBOX_MODE: namespace or landlock, not ${JSON.stringify(value)}`);
}

/** The mode under test; servers started by the helpers get it unless a test names another. */
export const SANDBOX_MODE: ConfinedMode = confinedMode(process.env.CODEXEC_TEST_SANDBOX_MODE);

/** The server setting for it. */
export const SANDBOX_ENV = { CODEXEC_SANDBOX_MODE: SANDBOX_MODE } as const;

/**
 * Root: the server drops code to uid 65534, lends it workspaces, writes cgroups. An ordinary
 * user's server runs code as itself in a user namespace, with rlimits where cgroups were.
 */
export const IS_ROOT = process.getuid?.() === 0;

/**
 * Whether `uid` is what code sees in the sandbox of a server run by this test's user: 65534 under
 * a root server (in landlock mode, a uid of the run's own), an ordinary user's own uid under theirs.
 */
export function isSandboxUid(uid: number): boolean {
  if (!IS_ROOT) return uid === process.getuid?.();
  return SANDBOX_MODE === 'landlock' ? isRunUid(uid) : uid === 65534;
}
