// The sandbox's side of the egress allowlist (SandboxSpec.egress): the forwarder a namespace or
// container sandbox runs before its program, listening on the sandbox's own loopback and relaying
// to the server's proxy through a Unix socket in the workspace.
import { packagePath } from '../../util/index.js';
import type { EgressEndpoint, SandboxSpec } from '../types.js';

export const FORWARDER = packagePath('drivers', 'egress_forward.py');

/** Whether `spec` starts with the forwarder: network `allowlist` with the proxy on a Unix socket. */
export function forwards(spec: SandboxSpec): spec is SandboxSpec & { egress: Required<EgressEndpoint> } {
  return (
    spec.network === 'allowlist' && spec.egress?.socket !== undefined && spec.egress.python !== undefined
  );
}

/**
 * `argv` behind the forwarder, paths given by `map` (a container's) and run by `python` (the
 * image's, in a container): the forwarder binds its port, then execs argv, which keeps its pid.
 */
export function forwardedArgv(
  argv: readonly string[],
  egress: Required<EgressEndpoint>,
  python: string = egress.python,
  map: (path: string) => string = (path) => path,
): string[] {
  return [python, '-I', '-S', map(FORWARDER), map(egress.socket), String(egress.port), ...argv];
}
