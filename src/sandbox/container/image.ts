// The sandbox image, built two ways: from Dockerfile.sandbox (needs a registry for its base
// images), or --from-host out of this machine's own interpreters (needs none). Both carry the same
// labels, which is how the backend learns which interpreter binaries to exec in the container.
import { execFile, spawn } from 'node:child_process';
import type { Writable } from 'node:stream';
import { promisify } from 'node:util';
import type { Interpreters } from '../../runtimes/index.js';
import type { ContainerEngine } from './engine.js';
import { planHostImage } from './host-image.js';
import { SANDBOX_UID } from './image-etc.js';
import { importArchive } from './image-import.js';

const run = promisify(execFile);

/** Label keys every codexec sandbox image has (`<engine> image inspect` reads them). */
export const IMAGE_LABELS = {
  sandbox: 'codexec.sandbox',
  python: 'codexec.python',
  node: 'codexec.node',
  bash: 'codexec.bash',
  fromHost: 'codexec.from-host',
} as const;

/** Absolute paths of the interpreters inside the image. */
export interface ImageInterpreters {
  readonly python: string;
  readonly node: string;
  readonly bash: string;
}

export interface BuiltImage {
  readonly tag: string;
  readonly engine: string;
  readonly bytes: number;
  readonly seconds: number;
  readonly labels: Readonly<Record<string, string>>;
  /** Why the image the tag named before was kept (in use by a container, say). */
  readonly note?: string;
}

export function imageLabels(interpreters: ImageInterpreters, fromHost: boolean): Record<string, string> {
  return {
    [IMAGE_LABELS.sandbox]: '1',
    [IMAGE_LABELS.python]: interpreters.python,
    [IMAGE_LABELS.node]: interpreters.node,
    [IMAGE_LABELS.bash]: interpreters.bash,
    [IMAGE_LABELS.fromHost]: fromHost ? '1' : '0',
  };
}

/** The Dockerfile instructions `import` applies (an imported tarball has no config of its own). */
export function importChanges(path: string, labels: Readonly<Record<string, string>>): string[] {
  return [
    `USER ${SANDBOX_UID}:${SANDBOX_UID}`,
    'WORKDIR /workspace',
    `ENV PATH=${path}`,
    'ENV LANG=C.UTF-8',
    // Where pip, npm and matplotlib put caches: the writable tmpfs, not nobody's /nonexistent.
    'ENV HOME=/tmp',
    ...Object.entries(labels).map(([key, value]) => `LABEL ${key}=${JSON.stringify(value)}`),
  ];
}

export function importArgs(engine: ContainerEngine, tag: string, changes: readonly string[]): string[] {
  return [...engine.global, 'import', ...changes.flatMap((change) => ['--change', change]), '-', tag];
}

export function dockerfileBuildArgs(
  engine: ContainerEngine,
  tag: string,
  dockerfile: string,
  context: string,
): string[] {
  return [...engine.global, 'build', '-t', tag, '-f', dockerfile, context];
}

/** Builds `tag` from the host's interpreters (as `interpreters` resolves them) with no registry. */
export async function buildImageFromHost(
  engine: ContainerEngine,
  interpreters: Interpreters,
  tag: string,
): Promise<BuiltImage> {
  const started = performance.now();
  const plan = await planHostImage(interpreters);
  const labels = imageLabels(plan, true);
  const previous = await imageId(engine, tag);
  await importArchive(
    engine,
    importArgs(engine, tag, importChanges(plan.path, labels)),
    plan.own,
    plan.names,
  );
  const bytes = await imageSize(engine, tag);
  const note = previous ? await dropIfUntagged(engine, previous) : undefined;
  const seconds = (performance.now() - started) / 1000;
  return { tag, engine: engine.name, bytes, seconds, labels, ...(note ? { note } : {}) };
}

export interface DockerfileBuild {
  readonly code: number;
  /** The output looks like a registry that could not be reached (then --from-host is the way). */
  readonly registryUnreachable: boolean;
}

/** Network trouble while fetching base images, in docker's and podman's words. */
const REGISTRY_TROUBLE =
  /pull|registry|manifest|dial tcp|no such host|i\/o timeout|TLS handshake|connection refused|network is unreachable|resolve source metadata|initializing source/i;

/** `<engine> build` of the Dockerfile, its output streamed to `output`, its exit code returned. */
export function buildImageFromDockerfile(
  engine: ContainerEngine,
  args: readonly string[],
  output: Writable,
): Promise<DockerfileBuild> {
  const child = spawn(engine.binary, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let tail = '';
  const copy = (chunk: Buffer) => {
    output.write(chunk);
    tail = (tail + chunk.toString('utf8')).slice(-8000);
  };
  child.stdout.on('data', copy);
  child.stderr.on('data', copy);
  return new Promise((resolve) => {
    child.on('error', (error) => {
      copy(Buffer.from(`${error.message}\n`));
      resolve({ code: 127, registryUnreachable: false });
    });
    child.on('close', (code) =>
      resolve({ code: code ?? 1, registryUnreachable: code !== 0 && REGISTRY_TROUBLE.test(tail) }),
    );
  });
}

async function imageId(engine: ContainerEngine, tag: string): Promise<string | undefined> {
  const inspect = [...engine.global, 'image', 'inspect', '--format', '{{.Id}}', tag];
  return run(engine.binary, inspect).then(
    ({ stdout }) => stdout.trim() || undefined,
    () => undefined, // no such image yet: nothing to replace
  );
}

/**
 * A rebuild moves the tag and leaves the old image untagged: hundreds of MB per rebuild. It is
 * removed once nothing names it; one still tagged elsewhere or used by a container stays.
 */
async function dropIfUntagged(engine: ContainerEngine, id: string): Promise<string | undefined> {
  try {
    const tags = [...engine.global, 'image', 'inspect', '--format', '{{len .RepoTags}}', id];
    if ((await run(engine.binary, tags)).stdout.trim() !== '0') return undefined;
    await run(engine.binary, [...engine.global, 'rmi', id]);
    return undefined;
  } catch (error) {
    const detail = (error as { stderr?: string }).stderr?.trim() || (error as Error).message;
    return `the previous image ${id.slice(0, 12)} was kept: ${detail}`;
  }
}

/** The image's size in bytes as the engine reports it. */
export async function imageSize(engine: ContainerEngine, tag: string): Promise<number> {
  const { stdout } = await run(engine.binary, [
    ...engine.global,
    'image',
    'inspect',
    '--format',
    '{{.Size}}',
    tag,
  ]);
  return Number(stdout.trim());
}
