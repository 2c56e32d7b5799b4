import type { z } from 'zod';
import type { BridgeRun } from '../bridge/index.js';
import type { Sampler } from '../codemode/index.js';
import type { CONNECTIONS, LaneUser, loggedConnection } from '../egress/index.js';
import type { executionResultSchema } from '../results/index.js';
import type { Language } from '../runtimes/index.js';
import type { HeldDir } from '../util/index.js';
import type { ResultImage } from './images.js';
import type { ArtifactsOmitted } from './listing.js';

export interface ExecutionRequest {
  readonly language: Language;
  readonly code: string;
  readonly timeoutMs?: number | undefined;
  /**
   * The caller's working directory, held by descriptor (policy's HostDirs or execute_command's
   * workspace): the run's files are walked and read through it. Default: a fresh workspace.
   */
  readonly workingDir?: HeldDir | undefined;
  /** Command-line arguments for the script. */
  readonly args?: readonly string[] | undefined;
  /** The saved script this run executes (run_script), recorded in the log entry. */
  readonly scriptName?: string | undefined;
  /**
   * 'command' (execute_command): `code` is a command line run as `bash -c code`, with no script
   * file; it needs `language: 'bash'` and a workingDir. Default 'script'.
   */
  readonly form?: 'script' | 'command' | undefined;
  /** Variables added to the run's environment (execute_command's VIRTUAL_ENV). */
  readonly env?: Readonly<Record<string, string>> | undefined;
  /** Directories put first on the run's PATH (a detected .venv/bin). */
  readonly pathPrefix?: readonly string[] | undefined;
  /** The tool that asked for the run, recorded in the log entry when it is not execute_code. */
  readonly tool?: string | undefined;
  /** Code mode: the run's view of the bridge; the code gets its helpers and a channel to it. */
  readonly bridge?: BridgeRun | undefined;
  /** Code mode with enable_sampling: what answers the code's llm.ask / llm.think. */
  readonly sampler?: Sampler | undefined;
  /** The egress allowlist narrowed for this run (the call's `allowed_domains`): never wider. */
  readonly allowedDomains?: readonly string[] | undefined;
  /** The egress allowlist under approval `ask`: asks the client about a host off the list. */
  readonly askEgress?: LaneUser['ask'] | undefined;
}

export type OutputStream = 'stdout' | 'stderr';

export interface RunOptions {
  readonly signal?: AbortSignal | undefined;
  /** Decoded output as it arrives, for streaming to the client. */
  readonly onOutput?: ((stream: OutputStream, text: string) => void) | undefined;
}

/**
 * One shape for every backend and every outcome: the wire's schema (results/), plus what never
 * goes on the wire: each picture's bytes (sent as image content) and the proxy's connections.
 * `walk_stopped` is only ever true here, as the execution log's entry expects.
 */
export type ExecutionResult = Omit<
  z.infer<ReturnType<typeof executionResultSchema>>,
  'images' | 'artifacts_omitted'
> & {
  images: ResultImage[];
  artifacts_omitted?: ArtifactsOmitted;
  /** The egress allowlist: every connection through the proxy, for the log and audit (never sent). */
  [CONNECTIONS]?: Array<ReturnType<typeof loggedConnection>>;
};
