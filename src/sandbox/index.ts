// Sandbox backends: run a resolved SandboxSpec as an isolated process tree.
// Backends never consult policy; the registry is the only place that picks one.

export {
  ContainerBackend,
  type ContainerEngine,
  type ContainerOptions,
  describeRuntime,
  findEngine,
} from './container/index.js';
export { countCpu, FORWARDER, findOnPath, type Layer } from './host/index.js';
export { LandlockBackend, type LandlockOptions, landlockAbi } from './landlock/index.js';
export {
  type Attempt,
  buildBwrapArgs,
  type Cause,
  type CauseId,
  type DiagnoseOptions,
  type Diagnosis,
  diagnoseNamespaces,
  explainCauses,
  NamespaceBackend,
  type NamespaceOptions,
  tryNamespaces,
} from './namespace/index.js';
export { type AutoOptions, BackendRegistry, describePick } from './registry.js';
export { SubprocessBackend } from './subprocess/index.js';
export type {
  Availability,
  BackendMode,
  Capabilities,
  EgressEndpoint,
  Exit,
  LimitKind,
  SandboxBackend,
  SandboxedProcess,
  SandboxSpec,
} from './types.js';
export { END_MARK_BYTES, NotForkableError, TERMINAL_FDS, TMP_PREFIX } from './types.js';
