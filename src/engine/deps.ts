// What the engine is built from: settings, backends, interpreters, the log, and the services a run
// shares with sessions (disk bounds, the secrets filter, saved outputs).
import type { Config } from '../config/index.js';
import type { DiskQuota } from '../disk/index.js';
import type { Credentials } from '../egress/index.js';
import type { LogWriter } from '../logs/index.js';
import type { SavedOutputs } from '../outputs/index.js';
import type { SecretsFilter } from '../policy/index.js';
import type { Interpreters } from '../runtimes/index.js';
import type { BackendRegistry } from '../sandbox/index.js';
import type { HeldMounts } from './mounts.js';

export interface EngineDeps {
  readonly config: Config;
  readonly backends: BackendRegistry;
  readonly interpreters: Interpreters;
  readonly logs: LogWriter;
  readonly hostEnv?: NodeJS.ProcessEnv;
  /** Masks secrets in run output before results, progress and logs (absent: redaction off). */
  readonly secrets?: SecretsFilter | undefined;
  /** The disk bounds, shared with sessions (a principal's quota spans both). */
  readonly disk: DiskQuota;
  /**
   * Code mode for every run (downstream MCP servers are configured): warm python and node
   * processes wait with the helpers defined (they connect on first use) and their channel bound.
   */
  readonly codeMode?: boolean | undefined;
  /** Keeps the whole output of a run the result truncates (absent: none kept). */
  readonly outputs?: SavedOutputs | undefined;
  /** CODEXEC_CREDENTIALS, held: every lane swaps their placeholders (absent: none). */
  readonly credentials?: Credentials | undefined;
  /** The operator's mounts (CODEXEC_MOUNTS), held; absent: none. */
  readonly mounts?: HeldMounts | undefined;
}
