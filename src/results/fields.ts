// The output fields that several results share (the runs of execute_code, run_script,
// send_to_session and execute_command, and the execution log's entry): written once here.
import { z } from 'zod';

/** How a result names files: what the model reads about names that are not plain text. */
export const NAMES_HELP =
  'names as shown: a backslash is \\\\, an undecodable byte or a C0 control \\xNN, other invisible ' +
  'or bidi controls \\uXXXX; secrets masked as ***';

/** The resource limits that can stop a run; each result says in its own words when one did. */
export const limitKind = () => z.enum(['memory', 'processes', 'cpu', 'file_size', 'disk']);

/** How the model learns that a result's list of files was cut (engine/listing.ts). */
export const artifactsOmitted = () =>
  z
    .object({
      created: z.number().int(),
      modified: z.number().int(),
      deleted: z.number().int(),
      walk_stopped: z
        .boolean()
        .optional()
        .describe(
          'true: the directory walk stopped at its bound (10,000 entries, 12 levels): files past it are not counted',
        ),
    })
    .optional()
    .describe(
      'present when the list was cut (CODEXEC_MAX_ARTIFACTS names, CODEXEC_MAX_ARTIFACT_BYTES bytes of names): ' +
        'how many files of each kind are not listed',
    );

const savedStream = () =>
  z
    .object({
      bytes: z.number().int().describe('UTF-8 bytes kept on disk (secrets masked as in stdout/stderr)'),
      uri: z.string().describe('codexec://exec/<execution_id>/stdout or /stderr (resources/read)'),
      partial: z
        .boolean()
        .describe('true when only the start is kept: the stream went past CODEXEC_MAX_SAVED_OUTPUT_BYTES'),
    })
    .optional();

/** `output_saved`: output past the truncation cap is kept, and read_file pages it. */
export const outputSavedField = () => ({
  output_saved: z
    .object({ stdout: savedStream(), stderr: savedStream() })
    .optional()
    .describe(
      'present when output was truncated: the whole stream is kept; page it with read_file ' +
        '{execution_id, path: "stdout"|"stderr", offset, length}',
    ),
});

/** Pictures: their bytes travel as MCP image content blocks, never in the JSON. */
export const imageFields = () => ({
  images: z
    .array(
      z.object({
        mime_type: z.string(),
        path: z.string().optional().describe('relative to working_dir; absent for a figure'),
      }),
    )
    .describe('matplotlib figures, then image files written; each also an image content block, in order'),
  images_skipped: z
    .array(
      z.object({
        path: z.string().optional(),
        reason: z.enum(['too_large', 'too_many']).describe('over the byte limit, or past the 4th image'),
      }),
    )
    .optional()
    .describe('pictures left out'),
});

/** `tool_calls` (and `tool_calls_omitted`) in results that ran code in code mode. */
export const toolCallsField = () => ({
  tool_calls: z
    .array(
      z.object({
        tool: z.string(),
        success: z.boolean(),
        duration_ms: z.number(),
        error: z.string().optional(),
      }),
    )
    .optional()
    .describe(
      'code mode: the downstream tool calls the code made, in order: the first CODEXEC_MAX_TOOL_CALL_RECORDS (100). ' +
        'Present with allowed_tools or enable_sampling, or when a call was made',
    ),
  tool_calls_omitted: z
    .array(z.object({ tool: z.string(), success: z.boolean(), count: z.number().int() }))
    .optional()
    .describe(
      'code mode: the calls past those in tool_calls, counted per tool and outcome (tool "*": every tool past ' +
        'the first 100 distinct ones); absent when none was left out',
    ),
});

/** `network_denied`: where the egress proxy refused the code. */
export const egressField = () => ({
  network_denied: z
    .array(z.object({ host: z.string(), port: z.number().int() }))
    .optional()
    .describe(
      'CODEXEC_NETWORK=allowlist: each host and port the egress proxy refused this code (not on the list, ' +
        'denied, or an internal address); present when any was',
    ),
});

/** A send whose code blocks reading input returns at once, saying so (send_to_session, execute_code). */
export const waitingFields = () => ({
  waiting_for_input: z
    .literal(true)
    .optional()
    .describe(
      'present when the code is blocked reading its input: the send returned without waiting for it; answer ' +
        'with send_to_session {session_id, input}',
    ),
  prompt: z.string().optional().describe('with waiting_for_input: the last line of output before the read'),
});
