// Sandbox mode landlock: runs confined by Landlock, seccomp and rlimits without any namespace,
// through codexec's own launcher; the kernel's Landlock ABI for doctor and the registry.
export { LandlockBackend, type LandlockOptions } from './backend.js';
export { Confiner, landlockAbi } from './confiner.js';
