import { pathToFileURL } from 'node:url';
import { type InterpreterKind, NODE_GLOBALS_IMPORT } from '../runtimes/index.js';
import { packagePath } from '../util/index.js';
import type { Channel } from './channel.js';

// The helpers code mode loads into the interpreter (drivers/codemode): readable by the sandbox,
// loaded before the program (one-shot) or the driver (sessions).

const file = (name: string) => packagePath('drivers', 'codemode', name);

export const CODE_MODE_DIR = packagePath('drivers', 'codemode');
const PYTHON_RUNNER = file('run_python.py');
const NODE_HELPER = file('bridge.mjs');
export const CODE_MODE_FILES: readonly string[] = [PYTHON_RUNNER, file('codexec_bridge.py'), NODE_HELPER];

/** Node's flags that load the helper ahead of any program or driver. */
export const NODE_IMPORT = ['--import', pathToFileURL(NODE_HELPER).href] as const;

/** A one-shot program's argv in code mode: python through the runner, node with the helper. */
export function codeModeArgv(
  kind: InterpreterKind,
  interpreter: string,
  script: string,
  args: readonly string[],
): string[] {
  if (kind === 'python') return [interpreter, PYTHON_RUNNER, script, ...args];
  return [interpreter, ...NODE_IMPORT, ...NODE_GLOBALS_IMPORT, script, ...args];
}

/** The socket and token, as the helpers read them (and take them out of the environment). */
export function channelEnv(channel: Channel | undefined): Record<string, string> {
  return channel ? { CODEXEC_BRIDGE_SOCKET: channel.socketPath, CODEXEC_BRIDGE_TOKEN: channel.token } : {};
}
