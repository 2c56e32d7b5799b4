// A bash session's background processes: drivers/bash_host.py sits between the server and the
// bash driver (which reads its channel only between cells) and serves them with the Python
// driver's code, while cells run too.
import type { Interpreters } from '../runtimes/index.js';
import { packagePath } from '../util/index.js';

export const BASH_HOST = packagePath('drivers', 'bash_host.py');
/** The host imports the Python driver's process code. */
export const BASH_HOST_FILES = [BASH_HOST, packagePath('drivers', 'python_driver.py')];

/**
 * The python3 that runs the host, or undefined where the sandbox has none (a container image
 * without Python): the bash driver then runs alone, and its session has no background processes.
 */
export function bashHostPython(interpreters: Interpreters): Promise<string | undefined> {
  return interpreters.get('python').catch(() => undefined);
}

/** The host's command line around the driver's (or the pty relay's); -S: no site, ~7 ms sooner. */
export function hostArgv(python: string, argv: readonly string[]): string[] {
  return [python, '-S', BASH_HOST, ...argv];
}
