/** One line of `executions-YYYY-MM-DD.jsonl`, in the seed's format (plus our `language`-level extras). */
export interface ExecutionLogEntry {
  readonly type: 'execution';
  readonly execution_id: string;
  readonly session_id?: string | null;
  readonly language: string;
  readonly code: string;
  readonly stdin: null;
  readonly stdout: string;
  readonly stderr: string;
  readonly exit_code: number | null;
  readonly timed_out: boolean;
  readonly cancelled: boolean;
  readonly duration_ms: number;
  readonly memory_peak_mb: number | null;
  readonly sandbox_mode: string;
  readonly working_dir: string;
  readonly artifacts: { readonly created: string[]; readonly modified: string[]; readonly deleted: string[] };
  /** How many names of each kind the run changed past the listed ones (CODEXEC_MAX_ARTIFACTS, …). */
  readonly artifacts_omitted?: {
    readonly created: number;
    readonly modified: number;
    readonly deleted: number;
    readonly walk_stopped?: true;
  };
  /** Packages installed for this run (seed field; returned by get_execution_log). */
  readonly packages_installed?: string[];
  /** Set by run_script: the saved script this execution ran (searchable, shown by get_execution_log). */
  readonly script_name?: string | null;
  /** The tool behind the run when it is not execute_code (execute_command: `code` is its command line). */
  readonly tool?: string;
  /** The resource limit that stopped the run (namespace mode), when one did. */
  readonly limit?: string;
  readonly executed_at: string;
  /** Code mode: the downstream tool calls the code made. */
  readonly tool_calls?: ReadonlyArray<{
    tool: string;
    success: boolean;
    duration_ms: number;
    error?: string;
  }>;
  /** Code mode: the calls past those in tool_calls (CODEXEC_MAX_TOOL_CALL_RECORDS), counted. */
  readonly tool_calls_omitted?: ReadonlyArray<{ tool: string; success: boolean; count: number }>;
  /** Who ran it (serve --http's principal; `local` for stdio): stamped by the LogWriter. */
  readonly principal?: string;
}
