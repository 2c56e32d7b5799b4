import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import type { ImageInfo } from './args.js';
import type { ContainerEngine } from './engine.js';
import { IMAGE_LABELS } from './image.js';

const run = promisify(execFile);

/** The image's interpreters (its `codexec.<kind>` labels) and PATH, or why it cannot be used. */
export async function inspectImage(engine: ContainerEngine, name: string): Promise<ImageInfo | string> {
  let raw: string;
  try {
    ({ stdout: raw } = await run(engine.binary, [
      ...engine.global,
      'image',
      'inspect',
      '--format',
      '{{json .Config}}',
      name,
    ]));
  } catch {
    return (
      `the sandbox image "${name}" is not in ${engine.name}'s store: build it with \`codexec image build\` ` +
      '(or `codexec image build --from-host` where no registry is reachable), or set CODEXEC_DOCKER_IMAGE'
    );
  }
  const config = JSON.parse(raw) as { Labels?: Record<string, string> | null; Env?: string[] | null };
  const labels = config.Labels ?? {};
  const path =
    (config.Env ?? []).find((entry) => entry.startsWith('PATH='))?.slice(5) ?? '/usr/local/bin:/usr/bin:/bin';
  const interpreters = Object.fromEntries(
    (['python', 'node', 'bash'] as const).flatMap((kind) => {
      const found = labels[IMAGE_LABELS[kind]];
      return found ? [[kind, found]] : [];
    }),
  );
  return { name, interpreters, path: path.split(':').filter(Boolean) };
}
