// Sandbox backends: run a resolved SandboxSpec as an isolated process tree.
// Backends never consult policy; the registry is the only place that picks one. The landlock and
// container backends are their folders' own (landlock/, container/): loaded when first wanted.

export { countCpu, FORWARDER, findOnPath, type Layer, NEST, NODE_FORKS } from './host/index.js';
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
  SpecMount,
} from './types.js';
export { END_MARK_BYTES, LIMIT_NOTE, NotForkableError, TERMINAL_FDS, TMP_PREFIX } from './types.js';
