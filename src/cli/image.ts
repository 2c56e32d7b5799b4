// `codexec image build`: the image sandbox mode docker runs code in. From Dockerfile.sandbox by
// default; --from-host builds an equivalent one from this machine's interpreters, with no registry.
import { CodexecError } from '../errors/index.js';
import { Interpreters } from '../runtimes/index.js';
import {
  buildImageFromDockerfile,
  buildImageFromHost,
  type ContainerEngine,
  dockerfileBuildArgs,
  type EngineChoice,
  findEngine,
  imageSize,
} from '../sandbox/container/index.js';
import { packagePath } from '../util/index.js';
import { configOrExit } from './config.js';

interface ImageBuildOptions {
  fromHost?: boolean;
  tag?: string;
  engine?: EngineChoice;
}

const PACKAGE_DIR = packagePath();
const DOCKERFILE = packagePath('Dockerfile.sandbox');

export async function imageBuildCommand(options: ImageBuildOptions): Promise<void> {
  const config = configOrExit();
  const tag = options.tag ?? config.docker.image;
  try {
    const engine = await findEngine(options.engine ?? config.docker.engine);
    if (options.fromHost) await fromHost(engine, new Interpreters(config.interpreters), tag);
    else await fromDockerfile(engine, tag);
  } catch (error) {
    if (!(error instanceof CodexecError)) throw error;
    process.stderr.write(`codexec: ${error.message}\n`);
    process.exitCode = 1;
  }
}

async function fromHost(engine: ContainerEngine, interpreters: Interpreters, tag: string): Promise<void> {
  process.stderr.write(`codexec: building ${tag} from this host's interpreters with ${engine.name}…\n`);
  const built = await buildImageFromHost(engine, interpreters, tag);
  console.log(`built ${built.tag} (from host) with ${built.engine} ${engine.version}`);
  console.log(`  size:    ${(built.bytes / 1e6).toFixed(0)} MB`);
  console.log(`  seconds: ${built.seconds.toFixed(1)}`);
  for (const [key, value] of Object.entries(built.labels)) console.log(`  ${key}=${value}`);
  if (built.note) process.stderr.write(`codexec: ${built.note}\n`);
}

async function fromDockerfile(engine: ContainerEngine, tag: string): Promise<void> {
  const started = performance.now();
  const args = dockerfileBuildArgs(engine, tag, DOCKERFILE, PACKAGE_DIR);
  process.stderr.write(`codexec: ${engine.binary} ${args.join(' ')}\n`);
  const build = await buildImageFromDockerfile(engine, args, process.stderr);
  if (build.code !== 0) {
    const hint = build.registryUnreachable
      ? 'its base images could not be fetched (is a registry reachable from here?); ' +
        '`codexec image build --from-host` builds an equivalent image from this machine with no registry'
      : 'see the output above; `codexec image build --from-host` needs no registry';
    process.stderr.write(`codexec: ${engine.name} build of ${tag} failed (exit ${build.code}): ${hint}\n`);
    process.exitCode = build.code;
    return;
  }
  const bytes = await imageSize(engine, tag);
  console.log(`built ${tag} (Dockerfile.sandbox) with ${engine.name} ${engine.version}`);
  console.log(`  size:    ${(bytes / 1e6).toFixed(0)} MB`);
  console.log(`  seconds: ${((performance.now() - started) / 1000).toFixed(1)}`);
}
