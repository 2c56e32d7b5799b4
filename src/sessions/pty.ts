// start_session {pty: true}: a bash driver on a pseudo-terminal made inside the sandbox by
// drivers/pty_relay.py (Python's stdlib pty), so the terminal is the sandbox's own, never the server's.
import { sandboxSpec } from '../engine/index.js';
import { InvalidInputError } from '../errors/index.js';
import type { Interpreters, Language } from '../runtimes/index.js';
import { type Capabilities, type SandboxBackend, type SandboxSpec, TERMINAL_FDS } from '../sandbox/index.js';
import { packagePath } from '../util/index.js';

/** The relay; the sandbox must be able to read it. */
export const PTY_RELAY = packagePath('drivers', 'pty_relay.py');

const handedFds = `${TERMINAL_FDS.master},${TERMINAL_FDS.slave}`;

/** What the probe runs: Python with its pty modules, and a terminal (its own, or the one handed over). */
const PROBE = [
  'import os, sys, termios',
  'try:',
  '    termios.tcgetattr(int(sys.argv[1]) if len(sys.argv) > 1 else os.openpty()[1])',
  'except OSError as error:',
  "    sys.exit(f'cannot open a pseudo-terminal: {error}')",
].join('\n');
const PROBE_TIMEOUT_MS = 30_000;

/** Where the probe runs: in the session's workspace, with its environment and limits. */
export interface ProbeSpec {
  readonly workspace: string;
  readonly env: SandboxSpec['env'];
  readonly limits: SandboxSpec['limits'];
}

/** The backends whose sandbox has given a terminal once: no probe after that. */
const probed = new WeakMap<SandboxBackend, Promise<void>>();

/** A pty is for bash sessions: refused, naming the language, before anything starts. */
export function assertPtyLanguage(language: Language): void {
  if (language !== 'bash')
    throw new InvalidInputError(`pty: true is for bash sessions; a ${language} session runs without one`);
}

/**
 * The relay's command line around the driver's. Where the backend signals a process group, not
 * every process, the driver (in a session of its own on its terminal) is outside that group, so
 * the relay passes an interrupt on; where the sandbox lets no program open a terminal, the backend
 * hands one over (SandboxSpec.terminal) on TERMINAL_FDS.
 */
export function ptyArgv(capabilities: Capabilities, python: string, driverArgv: readonly string[]): string[] {
  return [
    python,
    PTY_RELAY,
    ...(capabilities.signalsGroup ? ['--forward-signals'] : []),
    ...(capabilities.terminal === 'handed' ? ['--terminal-fds', handedFds] : []),
    '--',
    ...driverArgv,
  ];
}

/**
 * Find out, once per backend, whether its sandbox runs `python` and gives it a terminal (a
 * container image without Python has none); INVALID_INPUT saying why if not.
 */
function assertPtyAvailable(backend: SandboxBackend, python: string, spec: ProbeSpec): Promise<void> {
  let known = probed.get(backend);
  if (!known) {
    known = probe(backend, python, spec);
    probed.set(backend, known);
    known.catch(() => probed.delete(backend)); // the operator may fix it (a new image) and retry
  }
  return known;
}

async function probe(backend: SandboxBackend, python: string, spec: ProbeSpec): Promise<void> {
  const handed = backend.capabilities.terminal === 'handed';
  const proc = backend.spawn(
    sandboxSpec({
      argv: [python, '-c', PROBE, ...(handed ? [String(TERMINAL_FDS.slave)] : [])],
      terminal: handed,
      cwd: spec.workspace,
      env: spec.env,
      writable: [spec.workspace],
      limits: spec.limits,
      network: 'none',
    }),
  );
  let said = '';
  const hear = (chunk: Buffer) => {
    if (said.length < 4000) said += chunk.toString('utf8');
  };
  proc.stdout.on('data', hear);
  proc.stderr.on('data', hear);
  const timer = setTimeout(() => proc.kill('SIGKILL'), PROBE_TIMEOUT_MS);
  try {
    const exit = await proc.exited;
    if (exit.code === 0) return;
    const why = exit.spawnError?.message ?? (said.trim().split('\n').at(-1) || `exit code ${exit.code}`);
    throw new InvalidInputError(
      `pty: true is not available in sandbox mode ${backend.mode}: its terminal helper needs python3 ` +
        `with a pseudo-terminal inside the sandbox, and the check failed (${why}); start the session without pty`,
    );
  } finally {
    clearTimeout(timer);
    await proc.dispose();
  }
}

/** The python3 that runs the relay, once the sandbox has shown it can (else INVALID_INPUT). */
export async function ptyPython(
  interpreters: Interpreters,
  backend: SandboxBackend,
  spec: ProbeSpec,
): Promise<string> {
  const python = await interpreters.get('python').catch((error: Error) => {
    throw new InvalidInputError(`pty: true needs python3 for its terminal helper: ${error.message}`);
  });
  await assertPtyAvailable(backend, python, spec);
  return python;
}
