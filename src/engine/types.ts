import type { Language } from '../runtimes/index.js';
import type { LimitKind } from '../sandbox/index.js';

export interface ExecutionRequest {
  readonly language: Language;
  readonly code: string;
  readonly timeoutMs?: number | undefined;
  /** Caller's working directory (validated by policy); default: a fresh workspace. */
  readonly workingDir?: string | undefined;
  /** Command-line arguments for the script. */
  readonly args?: readonly string[] | undefined;
  /** The saved script this run executes (run_script), recorded in the log entry. */
  readonly scriptName?: string | undefined;
}

export type OutputStream = 'stdout' | 'stderr';

export interface RunOptions {
  readonly signal?: AbortSignal | undefined;
  /** Decoded output as it arrives, for streaming to the client. */
  readonly onOutput?: ((stream: OutputStream, text: string) => void) | undefined;
}

/** One shape for every backend and every outcome; field names are the wire's (snake_case). */
export interface ExecutionResult {
  success: boolean;
  execution_id: string;
  language: Language;
  stdout: string;
  stderr: string;
  /** null when the run was stopped (timeout, cancel) or never started. */
  exit_code: number | null;
  duration_ms: number;
  timed_out: boolean;
  cancelled: boolean;
  truncated: boolean;
  /** Files created or modified in the working directory, relative to it. */
  artifacts: string[];
  artifacts_deleted: string[];
  working_dir: string;
  sandbox_mode: string;
  /** true when a pre-started pool process ran it (no interpreter start-up on the request path). */
  warm: boolean;
  /** Present when a resource limit stopped the run (namespace mode reports it; stderr says so too). */
  limit?: LimitKind;
}
