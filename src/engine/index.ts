// The execution engine: one run of code from request to result — workspace, script file,
// sandboxed spawn, bounded output, timeout cascade, artifacts, log entry.

export { type ArtifactDiff, diffSnapshots, type Snapshot, snapshotDir } from './artifacts.js';
export {
  type Collected,
  type CollectOptions,
  closeSaved,
  collect,
  limitNote,
  type NamedLimits,
} from './collect.js';
export { type CommandOptions, type CommandResult, runCommand } from './command.js';
export type { EngineDeps } from './deps.js';
export { SCRIPT_BASENAME } from './drivers.js';
export { Engine } from './engine.js';
export { isGenerated } from './generated.js';
export {
  type CollectedImages,
  collectImages,
  FIGURE_BACKEND,
  FIGURES_DIR,
  figureEnv,
  MAX_IMAGES,
  PYTHON_SUPPORT_FILES,
  type ResultImage,
  type SkippedImage,
  sniffImage,
} from './images.js';
export { drain } from './kill.js';
export {
  type ArtifactBounds,
  type ArtifactListing,
  type ArtifactsOmitted,
  listArtifacts,
} from './listing.js';
export { HeldMounts } from './mounts.js';
export {
  type CollectedOutput,
  EndMarkFilter,
  OutputCollector,
  type OutputLimits,
  type OutputSink,
} from './output.js';
export {
  codeEnv,
  hostDirOf,
  type LaneOptions,
  openSandboxLane,
  type SpecOptions,
  sandboxSpec,
} from './sandbox-spec.js';
export { globalPackages, namedLimits, type PackageAccess } from './spec.js';
export type { ExecutionRequest, ExecutionResult, OutputStream, RunOptions } from './types.js';
