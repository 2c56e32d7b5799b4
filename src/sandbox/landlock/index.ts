// Sandbox mode landlock: the namespace backend's runs (cgroups, launchers, zygote), confined
// without any namespace by Landlock, seccomp and rlimits, applied by our own launcher (confine.ts).

/**
 * The Landlock ABI this kernel offers (0: none, or Landlock is not enabled), asked once by running
 * the launcher. Placeholder until the launcher lands: 0.
 */
export function landlockAbi(): number {
  return 0;
}
