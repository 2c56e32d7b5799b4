// Sandbox mode docker: runs in containers through the docker or podman CLI, each used once;
// sessions keep theirs. The engine, the command line as data, the image builders, the reaper.
export { buildContainerArgs, type ContainerRun, type ImageInfo, pathMapper, WORKSPACE } from './args.js';
export { ContainerBackend, type ContainerOptions } from './backend.js';
export { type ContainerEngine, type EngineChoice, type EngineName, findEngine } from './engine.js';
export {
  type BuiltImage,
  buildImageFromDockerfile,
  buildImageFromHost,
  type DockerfileBuild,
  dockerfileBuildArgs,
  IMAGE_LABELS,
  type ImageInterpreters,
  imageLabels,
  imageSize,
  importArgs,
  importChanges,
} from './image.js';
export { describeRuntime, runtimeArgs } from './runtime.js';
