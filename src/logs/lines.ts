import { z } from 'zod';
import { lazily } from '../util/index.js';

// One JSONL line as read back from disk, parsed with zod. Reading is lenient where writers may
// differ (session lines use `at` and may omit `language`; future fields pass through) and strict
// where search depends on it (an id, a parseable time, the right types).

/** The egress allowlist: one connection a run made through the proxy (its entry's `network`). */
export const networkConnectionSchema = z.object({
  host: z.string(),
  port: z.number().int(),
  allowed: z.boolean(),
  method: z.string().optional(),
  at: z.string().optional(),
  reason: z.string().optional(),
  asked: z.boolean().optional(),
});

/** Code mode: one downstream tool call a run made (its entry's `tool_calls`). */
export const toolCallSchema = z.object({
  tool: z.string(),
  success: z.boolean(),
  duration_ms: z.number(),
  error: z.string().optional(),
});

/** Code mode: calls past those in `tool_calls`, counted per tool and outcome. */
export const toolCallCountSchema = z.object({
  tool: z.string(),
  success: z.boolean(),
  count: z.number().int(),
});

/**
 * The schemas of a line read back, made on the first line read: an idle server that reads no log
 * holds none of them.
 */
const lineSchemas = lazily(() => {
  const timestamp = z.string().refine((value) => !Number.isNaN(Date.parse(value)), 'not a date');
  const names = z.array(z.string());
  const scan = z.record(z.string(), z.unknown()).nullish();

  const artifactsSchema = z.union([
    z.object({ created: names.default([]), modified: names.default([]), deleted: names.default([]) }),
    // A tool-style flat list (created or modified files).
    names.transform((created) => ({ created, modified: [] as string[], deleted: [] as string[] })),
  ]);

  const execution = z
    .object({
      type: z.literal('execution'),
      execution_id: z.string().min(1),
      session_id: z.string().min(1).nullish(),
      language: z.string().min(1).nullish(),
      code: z.string().default(''),
      stdin: z.string().nullish(),
      stdout: z.string().default(''),
      stderr: z.string().default(''),
      exit_code: z.number().int().nullable().default(null),
      timed_out: z.boolean().default(false),
      cancelled: z.boolean().default(false),
      duration_ms: z.number().nonnegative().default(0),
      memory_peak_mb: z.number().nullish(),
      sandbox_mode: z.string().nullish(),
      working_dir: z.string().nullish(),
      artifacts: artifactsSchema.nullish(),
      artifacts_omitted: z
        .object({
          created: z.number().int(),
          modified: z.number().int(),
          deleted: z.number().int(),
          walk_stopped: z.boolean().optional(),
        })
        .nullish(),
      packages_installed: names.nullish(),
      script_name: z.string().nullish(),
      limit: z.string().nullish(),
      network: z.array(networkConnectionSchema).nullish(),
      tool_calls: z.array(toolCallSchema).nullish(),
      tool_calls_omitted: z.array(toolCallCountSchema).nullish(),
      // Lines written before principals existed are the local operator's.
      principal: z.string().min(1).nullish(),
      guardian: z.object({ pre_scan: scan, post_scan: scan }).partial().nullish(),
      context: z
        .object({
          agent_id: z.string().nullish(),
          trace_id: z.string().nullish(),
          chat_id: z.string().nullish(),
        })
        .nullish(),
      executed_at: timestamp.optional(),
      at: timestamp.optional(),
    })
    .refine((line) => line.executed_at !== undefined || line.at !== undefined, {
      message: 'has neither executed_at nor at',
    });

  const sessionStart = z.object({
    type: z.literal('session_start'),
    session_id: z.string().min(1),
    language: z.string().min(1),
  });

  const typed = z.object({ type: z.string() });
  return { execution, sessionStart, typed };
});

export type ExecutionLine = z.output<ReturnType<typeof lineSchemas>['execution']>;

export type ParsedLine =
  | { readonly kind: 'execution'; readonly line: ExecutionLine }
  | { readonly kind: 'session_start'; readonly sessionId: string; readonly language: string }
  /** A well-formed line of a type search does not index (package_install, session_end, future ones). */
  | { readonly kind: 'other' }
  | { readonly kind: 'corrupt'; readonly reason: string };

/** Parse one line of a log file (without its newline). Never throws. */
export function parseLine(text: string): ParsedLine {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return { kind: 'corrupt', reason: 'not valid JSON' };
  }
  const schemas = lineSchemas();
  const head = schemas.typed.safeParse(value);
  if (!head.success) return { kind: 'corrupt', reason: 'not an object with a string "type"' };
  if (head.data.type === 'execution') {
    const parsed = schemas.execution.safeParse(value);
    if (parsed.success) return { kind: 'execution', line: parsed.data };
    return { kind: 'corrupt', reason: describe(parsed.error) };
  }
  if (head.data.type === 'session_start') {
    const parsed = schemas.sessionStart.safeParse(value);
    if (parsed.success) {
      return { kind: 'session_start', sessionId: parsed.data.session_id, language: parsed.data.language };
    }
    return { kind: 'corrupt', reason: describe(parsed.error) };
  }
  return { kind: 'other' };
}

function describe(error: z.ZodError): string {
  const issue = error.issues[0];
  if (!issue) return 'invalid entry';
  return issue.path.length > 0 ? `${issue.path.join('.')}: ${issue.message}` : issue.message;
}

export type ExecutionStatus = 'success' | 'failed' | 'timeout';

export function statusOf(
  line: Pick<ExecutionLine, 'exit_code' | 'timed_out' | 'cancelled'>,
): ExecutionStatus {
  if (line.timed_out) return 'timeout';
  return line.exit_code === 0 && !line.cancelled ? 'success' : 'failed';
}

/** When the execution started, as written (`executed_at`, or `at` in session files). */
export function executedAt(line: ExecutionLine): string {
  return (line.executed_at ?? line.at) as string;
}

const PREVIEW_CHARS = 200;

export function codePreview(code: string): string {
  return code.slice(0, PREVIEW_CHARS);
}

/** The last non-empty stderr line (where Python, Node and Bash put the error), for failed runs. */
export function errorPreview(line: ExecutionLine, status: ExecutionStatus): string | null {
  if (status === 'success') return null;
  const lines = line.stderr.split('\n');
  for (let i = lines.length - 1; i >= 0; i--) {
    const text = (lines[i] as string).trim();
    if (text !== '') return text.slice(0, PREVIEW_CHARS);
  }
  if (line.cancelled) return 'cancelled';
  return line.exit_code === null ? null : `exit code ${line.exit_code}`;
}
