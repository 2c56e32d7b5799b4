// How a session is made: what it is (language, directories, settings) and whom it tells of its
// sends, its background processes and its end.
import type { Config } from '../config/index.js';
import type { NamedLimits } from '../engine/index.js';
import type { SavedOutputs } from '../outputs/index.js';
import type { SecretsFilter } from '../policy/index.js';
import type { Language } from '../runtimes/index.js';
import type { Exit } from '../sandbox/index.js';
import type { HeldDir } from '../util/index.js';
import type { ProcEvent } from './protocol.js';

export interface SessionOptions {
  readonly id: string;
  readonly language: Language;
  readonly name: string | null;
  readonly cwd: string;
  /** cwd, held by descriptor for the session's life: its files are walked and read through it. */
  readonly dir: HeldDir;
  /** The session's own workspace (`sess_*`), which cwd is unless a working_dir was given. */
  readonly workspace: string;
  /** The workspace whose figures folder a send's matplotlib figures are saved in (Python). */
  readonly figuresWorkspace?: string | undefined;
  readonly config: Config;
  readonly sandboxMode: string;
  /** The limits a note names when one stops the session's process (engine's namedLimits). */
  readonly limits: NamedLimits;
  /** The driver runs on drivers/pty_relay.py's terminal: output relayed, stdout and stderr merged. */
  readonly pty?: boolean | undefined;
  /** Its driver serves background processes (start_process): a bash one needs its host. */
  readonly hostsProcesses?: boolean | undefined;
  /**
   * How its sandbox runs a port's forwarder (start_process expose_port): the command line before
   * SOCKET PORT, and the workspace as the sandbox sees it (a container's /workspace); absent where
   * a sandbox has no loopback of its own (landlock mode).
   */
  readonly forwarder?: { readonly argv: readonly string[]; readonly workspace: string } | undefined;
  /** Masks secrets in the output before results, progress and logs see it. */
  readonly secrets?: SecretsFilter | undefined;
  /** Keeps the whole output of a send the result truncates (absent: none kept). */
  readonly outputs?: SavedOutputs | undefined;
  /** Called after each send with its log entry (the seed's session `execution` line). */
  readonly onExecution: (entry: Record<string, unknown>) => void;
  /** What the driver says about the session's background processes (processes.ts). */
  readonly onProcess?: ((event: ProcEvent) => void) | undefined;
  /** Called once, after the process is gone and any running send has returned. */
  readonly onEnd: (exit: Exit) => Promise<void>;
}
