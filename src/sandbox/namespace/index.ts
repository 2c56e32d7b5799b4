// Sandbox mode namespace: runs in bubblewrap sandboxes (namespaces, seccomp, rlimits, cgroups),
// their command line built as data; why namespaces fail on a host, for doctor and the registry.
export { buildBwrapArgs } from './args.js';
export { NamespaceBackend, type NamespaceOptions } from './backend.js';
export {
  type Attempt,
  type Cause,
  type CauseId,
  type DiagnoseOptions,
  type Diagnosis,
  diagnoseNamespaces,
  explainCauses,
  tryNamespaces,
} from './diagnose.js';
