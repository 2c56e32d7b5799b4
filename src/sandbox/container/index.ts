// Sandbox mode docker: code runs in containers through the docker or podman CLI.
// The engine is found once; the image is built from Dockerfile.sandbox or from the host's interpreters.

// Engine detection (engine.ts) is reached through here by `codexec image build`.
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
