// The container engine the docker-mode tests drive (podman here and in CI; docker where its daemon
// runs) and the image they use, built from the host when missing.
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { CLI, callTool, type TestServer } from '../../helpers/server.js';

export const IMAGE = process.env.CODEXEC_TEST_IMAGE ?? 'codexec-sandbox';
/** podman unless CODEXEC_CONTAINER_ENGINE=docker (with DOCKER_HOST naming its daemon, if not the default). */
const ENGINE = process.env.CODEXEC_CONTAINER_ENGINE === 'docker' ? 'docker' : 'podman';

/** A server's settings for docker mode on this engine (the test server gets no other env). */
export const DOCKER_MODE: Record<string, string> = {
  CODEXEC_SANDBOX_MODE: 'docker',
  CODEXEC_DOCKER_IMAGE: IMAGE,
  CODEXEC_CONTAINER_ENGINE: ENGINE,
  ...(process.env.DOCKER_HOST && { DOCKER_HOST: process.env.DOCKER_HOST }),
  ...(process.env.CODEXEC_DOCKER_RUNTIME && { CODEXEC_DOCKER_RUNTIME: process.env.CODEXEC_DOCKER_RUNTIME }),
};

/** A docker-mode server's settings under one OCI runtime, or why that runtime cannot run here. */
export interface Runtime {
  readonly name: string;
  readonly env: Record<string, string>;
  readonly missing?: string;
}

/**
 * The runtimes the key docker-mode tests run under: the engine's default (or the environment's
 * CODEXEC_DOCKER_RUNTIME) and gVisor's runsc, where it is installed and the engine knows it.
 */
export const RUNTIMES: readonly Runtime[] = [
  { name: process.env.CODEXEC_DOCKER_RUNTIME ?? 'default', env: DOCKER_MODE },
  { name: 'runsc', env: { ...DOCKER_MODE, CODEXEC_DOCKER_RUNTIME: 'runsc' }, ...missing('runsc') },
];

/** gVisor's entry of RUNTIMES (the hostile suites' `docker (gVisor)` column). */
export const GVISOR = RUNTIMES[1] as Runtime;

/** The OCI runtime a docker-mode server runs containers with: its session container's, asked of the engine. */
export async function serverRuntime(server: TestServer): Promise<string> {
  const { value } = await callTool<{ session_id: string }>(server.client, 'start_session', {
    language: 'bash',
  });
  try {
    const [container = ''] = sessionContainersOf(server.pid);
    return runtimeOf(container.split(' ')[0] ?? '');
  } finally {
    await callTool(server.client, 'close_session', { session_id: value.session_id });
  }
}

function missing(runtime: string): { missing?: string } {
  if (spawnSync('sh', ['-c', `command -v ${runtime}`], { stdio: 'ignore' }).status !== 0)
    return { missing: `${runtime} is not installed (apt-get install ${runtime})` };
  if (ENGINE !== 'docker') return {};
  const known = engine('info', '--format', '{{range $name, $_ := .Runtimes}}{{$name}} {{end}}').split(' ');
  return known.includes(runtime) ? {} : { missing: `the docker daemon does not know ${runtime}` };
}

/** Run the engine's CLI; its stdout. */
export function engine(...args: string[]): string {
  return execFileSync(ENGINE, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
}

/** Build the image from the host if it is not there, and start one container (the engine's first start is slow). */
export function ensureImage(): void {
  if (spawnSync(ENGINE, ['image', 'inspect', IMAGE], { stdio: 'ignore' }).status !== 0) {
    const build = ['image', 'build', '--from-host', '--tag', IMAGE, '--engine', ENGINE];
    execFileSync(process.execPath, [CLI, ...build], { stdio: 'inherit' });
  }
}

/**
 * Names of the containers a server (by its pid) made that still exist: the engine's (sessions,
 * persistent containers, the OCI path's template) and those its OCI runtime started (one-shots).
 */
export function containersOf(pid: number): string[] {
  const byEngine = engine('ps', '--all', '--filter', `label=codexec.pid=${pid}`, '--format', '{{.Names}}')
    .split('\n')
    .filter(Boolean);
  return [...byEngine, ...ociContainersOf(pid)];
}

/** The same without the OCI path's template (created once per server, never started). */
export function runContainersOf(pid: number): string[] {
  return containersOf(pid).filter((name) => !name.endsWith('-template'));
}

/** Containers a server's OCI runtime holds (the owner files under /run/codexec/oci name the server). */
export function ociContainersOf(pid: number): string[] {
  const runtime = ociRuntimeOf(pid);
  if (!runtime) return [];
  const [binary = '', ...options] = runtime;
  const listed = spawnSync(binary, [...options, 'list', '--quiet'], { encoding: 'utf8' });
  return (listed.stdout ?? '').split('\n').filter(Boolean);
}

/** The OCI runtime and its global options a server starts one-shot containers with, if it does. */
export function ociRuntimeOf(pid: number): string[] | undefined {
  const base = '/run/codexec/oci';
  for (const entry of existsSync(base) ? readdirSync(base) : []) {
    try {
      const owner = JSON.parse(readFileSync(join(base, entry, 'owner'), 'utf8'));
      if (owner.pid === pid) return [owner.runtime, '--root', join(base, entry, 'state')];
    } catch {
      // being written, or removed meanwhile
    }
  }
  return undefined;
}

/** The OCI runtime the engine runs a container with (its name, or the path it was given). */
export function runtimeOf(name: string): string {
  const format = ENGINE === 'docker' ? '{{.HostConfig.Runtime}}' : '{{.OCIRuntime}}';
  return engine('inspect', '--format', format, name).trim();
}

/** Containers of a server's sessions (those running a session driver, not a warm one). */
export function sessionContainersOf(pid: number): string[] {
  return engine(
    'ps',
    '--filter',
    `label=codexec.pid=${pid}`,
    '--no-trunc',
    '--format',
    '{{.Names}} {{.Command}}',
  )
    .split('\n')
    .filter((line) => /\/(python|node|bash)_driver\./.test(line));
}

/**
 * Names of the containers a server created since `since` (the engine's event log). The log is asked
 * by whole seconds; each event's own time (ns) then leaves out what came earlier in the first one.
 */
export function createdSince(pid: number, since: Date): string[] {
  const lines = engine(
    'events',
    '--since',
    String(Math.floor(since.getTime() / 1000)),
    '--until',
    String(Math.ceil(Date.now() / 1000)),
    '--filter',
    'event=create',
    '--filter',
    `label=codexec.pid=${pid}`,
    '--format',
    ENGINE === 'docker' ? '{{.Actor.Attributes.name}} {{.TimeNano}}' : '{{.Name}} {{.Time}}',
  )
    .split('\n')
    .filter(Boolean);
  return lines
    .map((line) => {
      const [name = '', ...time] = line.split(' ');
      return { name, ms: eventMs(time) };
    })
    .filter((event) => !(event.ms < since.getTime()))
    .map((event) => event.name);
}

/** An event's time in ms: docker's nanoseconds, podman's `2026-11-30 09:40:32.444907436 +0000 UTC`. */
function eventMs(time: readonly string[]): number {
  if (ENGINE === 'docker') return Number(time[0]) / 1e6;
  const [day, clock = '', offset = '+0000'] = time;
  const [whole = '', fraction = '0'] = clock.split('.');
  const at = Date.parse(`${day}T${whole}${offset.replace(/(\d\d)(\d\d)$/, '$1:$2')}`);
  return at + Number(`0.${fraction}`) * 1000;
}
