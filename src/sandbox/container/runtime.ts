// The OCI runtime of sandbox mode docker (CODEXEC_DOCKER_RUNTIME, e.g. runsc for gVisor) on each
// engine's command line: podman takes it before the subcommand (engine.ts puts it in `global`),
// docker as an option of `run`, known to its daemon (`dockerd --add-runtime`).
import { execFile } from 'node:child_process';
import { basename } from 'node:path';
import { promisify } from 'node:util';
import type { ContainerEngine } from './engine.js';

const run = promisify(execFile);
const ANSWER_MS = 5000;

/** What a `run` with this network adds for the runtime: before the subcommand, and after `run`. */
export interface RuntimeArgs {
  readonly before: readonly string[];
  readonly run: readonly string[];
}

export function runtimeArgs(engine: Pick<ContainerEngine, 'name' | 'runtime'>, network: string): RuntimeArgs {
  const { runtime } = engine;
  if (!runtime) return { before: [], run: [] };
  if (engine.name === 'docker') return { before: [], run: ['--runtime', runtime] };
  // The flags are runsc's own (another runtime would refuse them). A driver connects to the
  // server's control socket in its workspace: gVisor lets code open a host socket only when told
  // (as runc does for any socket in a mount). podman hands gVisor a network namespace that runsc
  // cannot copy (it takes it for the root one): with none or host, runsc is told so itself.
  if (!isGvisor(runtime)) return { before: [], run: [] };
  // A session's exposed port (start_process expose_port): its forwarder creates a socket there
  // that the server opens from the host, which gVisor allows only when told (`all`: open, create).
  const flags = ['host-uds=all', ...(network === 'none' || network === 'host' ? [`network=${network}`] : [])];
  return { before: flags.flatMap((flag) => ['--runtime-flag', flag]), run: [] };
}

/** Whether a runtime (CODEXEC_DOCKER_RUNTIME: a path for podman, a daemon's name for docker) is gVisor's runsc. */
export function isGvisor(runtime: string | undefined): boolean {
  return runtime !== undefined && basename(runtime).startsWith('runsc');
}

/** The runtime an engine runs containers with, as the engine reports it (for `codexec doctor`). */
export async function describeRuntime(engine: ContainerEngine): Promise<string> {
  if (engine.name === 'podman') {
    const format = '{{.Host.OCIRuntime.Name}} at {{.Host.OCIRuntime.Path}}, {{.Host.OCIRuntime.Version}}';
    const { stdout } = await run(engine.binary, [...engine.global, 'info', '--format', format], {
      timeout: ANSWER_MS,
    });
    return stdout.trim().split('\n')[0] ?? '';
  }
  const format = '{{.DefaultRuntime}}\t{{range $name, $r := .Runtimes}}{{$name}}={{$r.Path}} {{end}}';
  const { stdout } = await run(engine.binary, [...engine.global, 'info', '--format', format], {
    timeout: ANSWER_MS,
  });
  const [fallback = '', listed = ''] = stdout.trim().split('\t');
  const name = engine.runtime ?? fallback;
  const path = listed
    .split(' ')
    .find((entry) => entry.startsWith(`${name}=`))
    ?.slice(name.length + 1);
  return `${name}${path ? ` at ${path}` : ''} (the daemon knows ${listed
    .trim()
    .split(' ')
    .map((e) => e.split('=')[0])
    .join(', ')})`;
}
