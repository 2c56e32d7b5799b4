import type { BridgeRun, ToolCallCount, ToolCallRecord } from '../bridge/index.js';
import type { Sampler } from '../codemode/index.js';
import type { CONNECTIONS, LaneUser, loggedConnection } from '../egress/index.js';
import type { OutputSaved } from '../outputs/index.js';
import type { Language } from '../runtimes/index.js';
import type { LimitKind } from '../sandbox/index.js';
import type { HeldDir } from '../util/index.js';
import type { ResultImage, SkippedImage } from './images.js';
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
  /** Where the whole output of a truncated stream is kept, for paging (present when any is). */
  output_saved?: OutputSaved;
  /** Files created or modified in the working directory, relative to it. */
  artifacts: string[];
  artifacts_deleted: string[];
  /** Present when names were left out (CODEXEC_MAX_ARTIFACTS / CODEXEC_MAX_ARTIFACT_BYTES): how many. */
  artifacts_omitted?: ArtifactsOmitted;
  working_dir: string;
  sandbox_mode: string;
  /** true when a pre-started pool process ran it (no interpreter start-up on the request path). */
  warm: boolean;
  /** Present when a resource limit stopped the run (namespace mode reports it; stderr says so too). */
  limit?: LimitKind;
  /** Figures, then image files among the artifacts (images.ts); their bytes go into MCP content. */
  images: ResultImage[];
  /** Present when pictures were left out (over CODEXEC_MAX_IMAGE_BYTES, or past the fourth). */
  images_skipped?: SkippedImage[];
  /** Code mode: the downstream tool calls the code made, in order (the first CODEXEC_MAX_TOOL_CALL_RECORDS). */
  tool_calls?: ToolCallRecord[];
  /** Code mode: the calls past those, counted per tool and outcome (present only when there were some). */
  tool_calls_omitted?: ToolCallCount[];
  /** The egress allowlist: each host and port the proxy refused the run, once (present when any). */
  network_denied?: Array<{ host: string; port: number }>;
  /** The egress allowlist: every connection through the proxy, for the log and audit (never sent). */
  [CONNECTIONS]?: Array<ReturnType<typeof loggedConnection>>;
}
