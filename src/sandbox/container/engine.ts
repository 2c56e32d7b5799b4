// Which container engine drives sandbox mode docker: the docker CLI when its daemon answers, else
// podman (no daemon). Both take the same commands; podman is given runc where it is installed,
// as crun fails on hosts with hybrid cgroups, unless CODEXEC_DOCKER_RUNTIME names another runtime
// (runtime.ts places it on each engine's command line; a docker daemon must know it).
import { execFile } from 'node:child_process';
import { basename } from 'node:path';
import { promisify } from 'node:util';
import { SandboxUnavailableError } from '../../errors/index.js';
import { findOnPath } from '../host/index.js';

const run = promisify(execFile);

export type EngineName = 'docker' | 'podman';
export type EngineChoice = 'auto' | EngineName;

export interface ContainerEngine {
  readonly name: EngineName;
  readonly binary: string;
  /** Options that go before every subcommand (podman's `--runtime`: the setting's, else runc where it exists). */
  readonly global: readonly string[];
  /** The engine's server version (docker's daemon; podman's own). */
  readonly version: string;
  /** The OCI runtime asked for (CODEXEC_DOCKER_RUNTIME); absent: the engine's default. */
  readonly runtime?: string;
}

/** How long an engine may take to say its version before it counts as not answering. */
const ANSWER_MS = 5000;

/**
 * The engine to use, or SandboxUnavailableError saying why none can be. With a runtime, an engine
 * that does not know it does not count (podman says so at `version`; docker's daemon lists its own).
 */
export async function findEngine(choice: EngineChoice, runtime?: string): Promise<ContainerEngine> {
  const tried: string[] = [];
  for (const name of choice === 'auto' ? (['docker', 'podman'] as const) : [choice]) {
    const answer = await tryEngine(name, runtime);
    if (typeof answer !== 'string') return answer;
    tried.push(answer);
  }
  throw new SandboxUnavailableError(
    `no container engine answers (${tried.join('; ')}). Install podman (apt-get install podman runc) ` +
      'or start the docker daemon, or set CODEXEC_CONTAINER_ENGINE; run `codexec doctor` for details',
  );
}

async function tryEngine(name: EngineName, runtime: string | undefined): Promise<ContainerEngine | string> {
  const binary = findOnPath(name);
  if (!binary) return `${name}: not on PATH`;
  const podmanRuntime = runtime ?? (findOnPath('runc') ? 'runc' : undefined);
  const global = name === 'podman' && podmanRuntime ? ['--runtime', podmanRuntime] : [];
  // docker: the server's version proves its daemon answers; the client alone runs nothing.
  const format = name === 'docker' ? '{{.Server.Version}}' : '{{.Client.Version}}';
  try {
    const { stdout } = await run(binary, [...global, 'version', '--format', format], {
      timeout: ANSWER_MS,
    });
    const version = stdout.trim();
    if (!version) return `${name}: no server version (is its daemon running?)`;
    const engine = { name, binary, global, version, ...(runtime && { runtime }) };
    if (name === 'docker' && runtime) {
      const known = await dockerRuntimes(engine);
      if (!known.includes(runtime)) return `${name}: ${missingRuntime(runtime, known)}`;
    }
    return engine;
  } catch (error) {
    const detail =
      (error as { stderr?: string }).stderr?.trim().split('\n').pop() || (error as Error).message;
    return `${name}${runtime ? ` (runtime ${runtime}, CODEXEC_DOCKER_RUNTIME)` : ''}: ${detail}`;
  }
}

/** The runtimes a docker daemon knows (`docker info`): an engine asked for another does not count. */
export async function dockerRuntimes(engine: Pick<ContainerEngine, 'binary' | 'global'>): Promise<string[]> {
  const format = '{{range $name, $_ := .Runtimes}}{{$name}}\n{{end}}';
  const { stdout } = await run(engine.binary, [...engine.global, 'info', '--format', format], {
    timeout: ANSWER_MS,
  });
  return stdout.split('\n').filter(Boolean);
}

export function missingRuntime(runtime: string, known: readonly string[]): string {
  return (
    `its daemon does not know the runtime "${runtime}" (CODEXEC_DOCKER_RUNTIME; it knows ` +
    `${known.join(', ') || 'none'}): add it, e.g. dockerd --add-runtime ${basename(runtime)}=/usr/bin/runsc ` +
    'or "runtimes" in /etc/docker/daemon.json'
  );
}
