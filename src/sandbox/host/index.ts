// What the sandbox modes share of the host: finding programs, what a sandbox sees of the system,
// cgroups, launchers, zygotes, ownership, seccomp, rlimits, reapers, and the base of the two backends.
export { HostBackend, type HostOptions, lendTo, OUTSIDE_FORKED_CGROUP } from './backend.js';
export type { RunCgroup } from './cgroups.js';
export { FORWARDER, forwardedArgv, forwards } from './egress.js';
export { staticExecutable } from './elf.js';
export { childStdio } from './fds.js';
export {
  HOST_DIR_FD,
  type Ready,
  SECCOMP_FD,
  type Shape,
  type Started,
  startDirect,
} from './launcher.js';
export { type Identity, identityFor, Lease, lendable, NOBODY, reclaimTree } from './ownership.js';
export { alive } from './process.js';
export { processGroupReaper } from './reaper.js';
export { cpu, type Rlimit, runRlimits, ulimitArgs } from './rlimits.js';
export { ensureRootDir, rootOnly } from './root-only.js';
export { type FilterOptions, hostFilter, socketPolicy } from './seccomp.js';
export type { HostSetup, Layer, Tools } from './setup.js';
export { ignoreStreamErrors } from './streams.js';
export {
  BOUND_ETC,
  bindSource,
  COPIED_ETC,
  etcEntries,
  findOnPath,
  interpreterMount,
  type SystemMount,
  systemMounts,
} from './system.js';
export { countCpu, SAMPLE_MS } from './tree-cpu.js';
export { Watcher } from './watcher.js';
export { DRIVERS, NEST, NODE_FORKS, type ZygoteSandbox } from './zygote.js';
