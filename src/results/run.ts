// The result of running code, declared once: the one-shot run (engine), execute_code's answer (a
// one-shot run or a send), a session's send and execute_command's run all derive from it.
import { z } from 'zod';
import { LANGUAGES } from '../runtimes/index.js';
import {
  artifactsOmitted,
  egressField,
  imageFields,
  limitKind,
  NAMES_HELP,
  outputSavedField,
  toolCallsField,
  waitingFields,
} from './fields.js';

/** One run of code, one-shot, as the engine reports it for every backend and every outcome. */
export const executionResultSchema = () =>
  z.object({
    success: z.boolean().describe('true when the code exited 0 within its time limit'),
    execution_id: z.string().describe('exec_ + 12 hex; find it later in the execution logs'),
    language: z.enum(LANGUAGES),
    stdout: z.string(),
    stderr: z.string(),
    exit_code: z.number().int().nullable().describe('null when the run was stopped (timeout, cancel)'),
    duration_ms: z.number().int(),
    timed_out: z.boolean(),
    cancelled: z.boolean(),
    truncated: z.boolean().describe('true when stdout or stderr was cut to head + tail'),
    ...outputSavedField(),
    artifacts: z
      .array(z.string())
      .describe(`files created or modified, relative to working_dir (${NAMES_HELP})`),
    artifacts_deleted: z.array(z.string()),
    artifacts_omitted: artifactsOmitted(),
    working_dir: z.string().describe('absolute directory the code ran in; artifacts live here'),
    sandbox_mode: z.string().describe('isolation actually used: namespace, landlock, subprocess or docker'),
    warm: z.boolean().describe('true when a pre-started sandboxed interpreter ran it'),
    limit: limitKind()
      .optional()
      .describe('present when a resource limit stopped the run: memory, processes, cpu, file_size or disk'),
    ...imageFields(),
    ...toolCallsField(),
    ...egressField(),
  });

/** execute_code's and run_script's answer: a one-shot run, or (execute_code {session_id}) a send. */
export const executeCodeResultSchema = () =>
  executionResultSchema().extend({
    session_id: z.string().optional().describe('with session_id: the session it ran in'),
    session_alive: z
      .boolean()
      .optional()
      .describe('with session_id: false when the session ended during this run'),
    error: z.string().optional().describe('with session_id: why the session ended, when it did'),
    ...waitingFields(),
  });

/**
 * One send to a session: a run's fields in the session's words, with the session's own; where it
 * ran is the session's (start_session said). `pick` after `extend` keeps the wire's field order.
 */
export const sendResultSchema = () =>
  executionResultSchema()
    .extend({
      success: z
        .boolean()
        .describe('true when the code ran without error within its time limit, or waits for input'),
      execution_id: z.string(),
      session_id: z.string(),
      stdout: z.string().describe("output, including the display of a trailing expression's value"),
      exit_code: z.number().int().nullable().describe('0 ok, 1 error, 130 interrupted; null when stopped'),
      artifacts: z
        .array(z.string())
        .describe(`files created or modified by this send, relative to working_dir (${NAMES_HELP})`),
      session_alive: z.boolean().describe('false when the session ended during this send'),
      error: z.string().optional().describe('why the session ended, when it did'),
      limit: limitKind()
        .optional()
        .describe('present when a bound ended the session during this send: disk (its workspace)'),
      ...waitingFields(),
    })
    .pick({
      success: true,
      execution_id: true,
      session_id: true,
      language: true,
      stdout: true,
      stderr: true,
      exit_code: true,
      duration_ms: true,
      timed_out: true,
      cancelled: true,
      truncated: true,
      output_saved: true,
      artifacts: true,
      artifacts_deleted: true,
      artifacts_omitted: true,
      session_alive: true,
      error: true,
      limit: true,
      images: true,
      images_skipped: true,
      tool_calls: true,
      tool_calls_omitted: true,
      network_denied: true,
      waiting_for_input: true,
      prompt: true,
    });

/**
 * execute_command's answer: a run of `bash -c`, under the names MassGen's tool gave its fields
 * (`work_dir`, `execution_time` in seconds) first, then ours; no language, pictures or code mode.
 */
export const commandResultSchema = () =>
  executionResultSchema()
    .extend({
      success: z.boolean().describe('true when the command exited 0 within its time limit'),
      exit_code: z.number().int().nullable().describe('null when the command was stopped (timeout, cancel)'),
      execution_time: z.number().describe('seconds the command ran'),
      work_dir: z.string().describe('absolute directory the command ran in'),
      working_dir: z.string().describe('work_dir, under the name the other run tools give it'),
      artifacts: z
        .array(z.string())
        .describe(`files created or modified, relative to work_dir (caches left out; ${NAMES_HELP})`),
      venv: z.string().nullable().describe('the work_dir/.venv put first on PATH (VIRTUAL_ENV set), or null'),
      limit: limitKind().optional(),
    })
    .pick({
      success: true,
      exit_code: true,
      stdout: true,
      stderr: true,
      execution_time: true,
      execution_id: true,
      duration_ms: true,
      timed_out: true,
      cancelled: true,
      truncated: true,
      output_saved: true,
      work_dir: true,
      working_dir: true,
      sandbox_mode: true,
      artifacts: true,
      artifacts_deleted: true,
      artifacts_omitted: true,
      venv: true,
      limit: true,
      network_denied: true,
    });
