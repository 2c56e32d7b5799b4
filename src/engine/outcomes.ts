// What a run's result says beside its process's output: its tool calls (code mode), a failure
// before any process (TypeScript that does not parse), the end mark a cold run's sandbox writes,
// and the run's execution log entry.
import { randomUUID } from 'node:crypto';
import { toolCallFields } from '../bridge/index.js';
import { CONNECTIONS } from '../egress/index.js';
import type { SecretsFilter } from '../policy/index.js';
import type { CodeSyntaxError } from '../runtimes/index.js';
import { END_MARK_BYTES } from '../sandbox/index.js';
import { isoTime } from '../util/index.js';
import type { ArtifactDiff } from './artifacts.js';
import type { Collected } from './collect.js';
import type { ExecutionRequest, ExecutionResult } from './types.js';

/** The run's tool calls for its result and log entry (none: no code mode, or no call made). */
export function toolCallsOf(request: ExecutionRequest) {
  const log = request.bridge?.takeCalls();
  return log ? toolCallFields(log) : {};
}

/** Code that could not be prepared (a TypeScript syntax error) fails like a run that exited 1. */
export function syntaxFailure(error: CodeSyntaxError, secrets: SecretsFilter | undefined): Collected {
  // The message may quote the code's line: masked like any output.
  const stderr = `${error.message}\n`;
  return {
    stdout: '',
    stderr: secrets ? secrets.redact(stderr) : stderr,
    truncated: false,
    exit_code: 1,
    timed_out: false,
    cancelled: false,
  };
}

/** A cold run's end mark (SandboxSpec.endMark): END_MARK_BYTES of ASCII. */
export function coldMark(): string {
  const mark = `\n[codexec-end ${randomUUID().replaceAll('-', '').slice(0, 16)}]\n`;
  if (mark.length !== END_MARK_BYTES) throw new Error('end mark of the wrong length');
  return mark;
}

/** The execution log's entry of a one-shot run (the seed's fields, then ours when present). */
export function executionEntry(request: ExecutionRequest, result: ExecutionResult, diff: ArtifactDiff) {
  return {
    type: 'execution',
    execution_id: result.execution_id,
    session_id: null,
    script_name: request.scriptName ?? null,
    ...(request.tool && { tool: request.tool }),
    language: result.language,
    code: request.code,
    stdin: null,
    stdout: result.stdout,
    stderr: result.stderr,
    exit_code: result.exit_code,
    timed_out: result.timed_out,
    cancelled: result.cancelled,
    duration_ms: result.duration_ms,
    memory_peak_mb: null,
    sandbox_mode: result.sandbox_mode,
    working_dir: result.working_dir,
    ...(result.limit && { limit: result.limit }),
    ...(result.tool_calls && { tool_calls: result.tool_calls }),
    ...(result.tool_calls_omitted && { tool_calls_omitted: result.tool_calls_omitted }),
    ...(result[CONNECTIONS] && { network: result[CONNECTIONS] }),
    artifacts: diff,
    ...(result.artifacts_omitted && { artifacts_omitted: result.artifacts_omitted }),
    executed_at: isoTime(Date.now() - result.duration_ms),
  } as const;
}
