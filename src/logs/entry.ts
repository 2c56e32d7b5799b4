import { type ExecutionLine, type ExecutionStatus, executedAt, statusOf } from './lines.js';

/** `get_execution_log`'s answer: the seed's flat entry, plus our explicit status flags. */
export interface FullEntry {
  execution_id: string;
  session_id: string | null;
  language: string | null;
  status: ExecutionStatus;
  code: string;
  stdin: string | null;
  stdout: string;
  stderr: string;
  exit_code: number | null;
  timed_out: boolean;
  cancelled: boolean;
  duration_ms: number;
  memory_peak_mb: number | null;
  packages_installed: string[];
  artifacts_created: string[];
  artifacts_modified: string[];
  artifacts_deleted: string[];
  /** Present when the run changed more files than its entry lists. */
  artifacts_omitted?: {
    created: number;
    modified: number;
    deleted: number;
    walk_stopped?: boolean | undefined;
  };
  sandbox_mode: string | null;
  working_dir: string | null;
  script_name: string | null;
  limit: string | null;
  /** The egress allowlist: every connection through the proxy (present when the run made any). */
  network?: NonNullable<ExecutionLine['network']>;
  /** Code mode: the downstream tool calls the code made (present when the run was in code mode). */
  tool_calls?: NonNullable<ExecutionLine['tool_calls']>;
  /** Code mode: the calls past those in tool_calls, counted (present when some were). */
  tool_calls_omitted?: NonNullable<ExecutionLine['tool_calls_omitted']>;
  guardian_pre_scan: Record<string, unknown> | null;
  guardian_post_scan: Record<string, unknown> | null;
  agent_id: string | null;
  trace_id: string | null;
  chat_id: string | null;
  executed_at: string;
}

/** The entry of a JSONL execution line (`indexedLanguage`: its session's, when the line has none). */
export function toFullEntry(line: ExecutionLine, indexedLanguage: string | null = null): FullEntry {
  return {
    execution_id: line.execution_id,
    session_id: line.session_id ?? null,
    language: line.language ?? indexedLanguage,
    status: statusOf(line),
    code: line.code,
    stdin: line.stdin ?? null,
    stdout: line.stdout,
    stderr: line.stderr,
    exit_code: line.exit_code,
    timed_out: line.timed_out,
    cancelled: line.cancelled,
    duration_ms: line.duration_ms,
    memory_peak_mb: line.memory_peak_mb ?? null,
    packages_installed: line.packages_installed ?? [],
    artifacts_created: line.artifacts?.created ?? [],
    artifacts_modified: line.artifacts?.modified ?? [],
    artifacts_deleted: line.artifacts?.deleted ?? [],
    ...(line.artifacts_omitted && { artifacts_omitted: line.artifacts_omitted }),
    sandbox_mode: line.sandbox_mode ?? null,
    working_dir: line.working_dir ?? null,
    script_name: line.script_name ?? null,
    limit: line.limit ?? null,
    ...(line.network?.length && { network: line.network }),
    ...(line.tool_calls && { tool_calls: line.tool_calls }),
    ...(line.tool_calls_omitted?.length && { tool_calls_omitted: line.tool_calls_omitted }),
    guardian_pre_scan: line.guardian?.pre_scan ?? null,
    guardian_post_scan: line.guardian?.post_scan ?? null,
    agent_id: line.context?.agent_id ?? null,
    trace_id: line.context?.trace_id ?? null,
    chat_id: line.context?.chat_id ?? null,
    executed_at: executedAt(line),
  };
}
