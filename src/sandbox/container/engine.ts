// Which container engine drives sandbox mode docker: the docker CLI when its daemon answers, else
// podman (no daemon). Both take the same commands; podman is given runc where it is installed,
// as crun fails on hosts with hybrid cgroups.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { SandboxUnavailableError } from '../../errors/index.js';
import { findOnPath } from '../namespace/index.js';

const run = promisify(execFile);

export type EngineName = 'docker' | 'podman';
export type EngineChoice = 'auto' | EngineName;

export interface ContainerEngine {
  readonly name: EngineName;
  readonly binary: string;
  /** Options that go before every subcommand (`--runtime runc` for podman where runc exists). */
  readonly global: readonly string[];
  /** The engine's server version (docker's daemon; podman's own). */
  readonly version: string;
}

/** How long an engine may take to say its version before it counts as not answering. */
const ANSWER_MS = 5000;

/** The engine to use, or SandboxUnavailableError saying why none can be. */
export async function findEngine(choice: EngineChoice): Promise<ContainerEngine> {
  const tried: string[] = [];
  for (const name of choice === 'auto' ? (['docker', 'podman'] as const) : [choice]) {
    const answer = await tryEngine(name);
    if (typeof answer !== 'string') return answer;
    tried.push(answer);
  }
  throw new SandboxUnavailableError(
    `no container engine answers (${tried.join('; ')}). Install podman (apt-get install podman runc) ` +
      'or start the docker daemon, or set CODEXEC_CONTAINER_ENGINE; run `codexec doctor` for details',
  );
}

async function tryEngine(name: EngineName): Promise<ContainerEngine | string> {
  const binary = findOnPath(name);
  if (!binary) return `${name}: not on PATH`;
  const global = name === 'podman' && findOnPath('runc') ? ['--runtime', 'runc'] : [];
  // docker: the server's version proves its daemon answers; the client alone runs nothing.
  const format = name === 'docker' ? '{{.Server.Version}}' : '{{.Client.Version}}';
  try {
    const { stdout } = await run(binary, [...global, 'version', '--format', format], {
      timeout: ANSWER_MS,
    });
    const version = stdout.trim();
    if (!version) return `${name}: no server version (is its daemon running?)`;
    return { name, binary, global, version };
  } catch (error) {
    const detail =
      (error as { stderr?: string }).stderr?.trim().split('\n').pop() || (error as Error).message;
    return `${name}: ${detail}`;
  }
}
