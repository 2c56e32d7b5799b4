// The template container of the OCI runtime path: created by the engine with the confinement of
// every run and never started (podman `create`, then `init`), so that the engine writes the OCI
// configuration it would start a run with and mounts the image's root filesystem. Runs start from
// that configuration (bundle.ts) over that root, read-only to them. It lives as long as its server
// and carries the server's labels: the container reaper removes it with the server's containers.
import { execFile } from 'node:child_process';
import { lstatSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { z } from 'zod';
import { buildTemplateArgs, type ContainerRun, TEMPLATE_PROGRAM, WORKSPACE } from '../args.js';
import type { ContainerEngine } from '../engine.js';
import { engineCwd } from '../engine-cwd.js';
import { initPrefix, type OciConfig, OPT_INSIDE } from './bundle.js';
import { narrowed } from './seccomp.js';

const run = promisify(execFile);
/** How long the engine may take to create and mount the template. */
const PREPARE_MS = 60_000;

export interface Template {
  readonly name: string;
  readonly config: OciConfig;
  /** The engine's init (`--init`), before every run's program. */
  readonly init: readonly string[];
}

// Only what bundle.ts relies on is checked; everything else passes through as the engine wrote it.
const configSchema = z
  .object({
    process: z
      .object({
        user: z.object({ uid: z.number(), gid: z.number(), umask: z.number().optional() }).loose(),
        args: z.array(z.string()).min(1),
        env: z.array(z.string()).optional(),
        cwd: z.string(),
        rlimits: z.array(z.object({ type: z.string(), hard: z.number(), soft: z.number() })).optional(),
      })
      .loose(),
    root: z.object({ path: z.string().startsWith('/'), readonly: z.literal(true) }).loose(),
    mounts: z.array(
      z.object({
        destination: z.string(),
        type: z.string(),
        source: z.string(),
        options: z.array(z.string()).optional(),
      }),
    ),
    linux: z
      .object({
        cgroupsPath: z.string().optional(),
        resources: z.object({}).loose().optional(),
        namespaces: z.array(z.object({ type: z.string(), path: z.string().optional() })).optional(),
        seccomp: z
          .object({
            syscalls: z
              .array(z.object({ names: z.array(z.string()), action: z.string() }).loose())
              .optional(),
          })
          .loose(),
      })
      .loose(),
  })
  .loose();

/** Create the template of `run` (its name, labels, image, confinement) and read what the engine wrote. */
export async function createTemplate(
  engine: ContainerEngine,
  container: ContainerRun,
  limits: { readonly maxProcs: number; readonly maxFileMb: number; readonly memoryMb: number },
): Promise<Template> {
  if (engine.name !== 'podman')
    throw new Error(`${engine.name} does not show a container's OCI configuration`);
  const cli = (args: readonly string[]) =>
    run(engine.binary, [...engine.global, ...args], { cwd: engineCwd(), timeout: PREPARE_MS });
  await cli(buildTemplateArgs(container, limits));
  await cli(['init', container.name]);
  const { stdout } = await cli(['inspect', '--format', '{{.OCIConfigPath}}', container.name]);
  const written = configSchema.parse(JSON.parse(readFileSync(stdout.trim(), 'utf8')));
  const config: OciConfig = {
    ...written,
    linux: { ...written.linux, seccomp: narrowed(written.linux.seccomp) },
  };
  for (const dir of [WORKSPACE, OPT_INSIDE]) makeMountPoint(config.root.path, dir);
  const bash = container.image.interpreters.bash ?? 'bash';
  return { name: container.name, config, init: initPrefix(config, [bash, ...TEMPLATE_PROGRAM]) };
}

/**
 * A directory at `inside` of the root, made now, where no run has used the root yet: runs see it
 * read-only. A symbolic link of the image on the way is refused, not followed (on the host).
 */
function makeMountPoint(root: string, inside: string): void {
  let path = root;
  for (const part of inside.split('/').filter(Boolean)) {
    path = join(path, part);
    const stat = lstatSync(path, { throwIfNoEntry: false });
    if (!stat) mkdirSync(path, { mode: 0o755 });
    else if (!stat.isDirectory())
      throw new Error(`the image's ${inside} is not a directory (a link or a file on its way)`);
  }
}
