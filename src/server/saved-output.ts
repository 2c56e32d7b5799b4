// Output past the truncation cap: the `output_saved`
// field of the results that run code, and reading it back — read_file {execution_id, path} pages
// it, resources/read of codexec://exec/<id>/stdout returns it whole. Only the principal that ran
// the execution finds it: the execution log is asked first (history.get), so another principal's
// id fails exactly like an unknown one.
import { z } from 'zod';
import type { SavedSlice, SavedStreamName } from '../outputs/index.js';
import type { Services } from './services.js';

const savedStream = z
  .object({
    bytes: z.number().int().describe('UTF-8 bytes kept on disk (secrets masked as in stdout/stderr)'),
    uri: z.string().describe('codexec://exec/<execution_id>/stdout or /stderr (resources/read)'),
    partial: z
      .boolean()
      .describe('true when only the start is kept: the stream went past CODEXEC_MAX_SAVED_OUTPUT_BYTES'),
  })
  .optional();

/** `output_saved` in the results of execute_code, run_script, execute_command and send_to_session. */
export const outputSavedField = {
  output_saved: z
    .object({ stdout: savedStream, stderr: savedStream })
    .optional()
    .describe(
      'present when output was truncated: the whole stream is kept; page it with read_file ' +
        '{execution_id, path: "stdout"|"stderr", offset, length}',
    ),
};

/** The sentence tool descriptions add about truncated output. */
export const SAVED_HELP =
  'When output is truncated, the whole of it is kept (output_saved): page it with read_file ' +
  '{execution_id, path: "stdout" or "stderr", offset}.';

/** read_file's default and largest slice of saved output. */
export const DEFAULT_SLICE_BYTES = 64 * 1024;

/** A slice of a saved stream, after checking the caller ran the execution. */
export async function readSavedSlice(
  services: Services,
  principal: string,
  executionId: string,
  stream: SavedStreamName,
  offset: number,
  length: number | undefined,
): Promise<SavedSlice> {
  await services.history.get(executionId, principal);
  const max = services.config.maxFileTransferBytes;
  return services.outputs.read(
    principal,
    executionId,
    stream,
    offset,
    Math.min(length ?? DEFAULT_SLICE_BYTES, max),
  );
}

/** A whole saved stream (at most CODEXEC_MAX_FILE_TRANSFER_BYTES), after the same check. */
export async function readSavedWhole(
  services: Services,
  principal: string,
  executionId: string,
  stream: SavedStreamName,
): Promise<string> {
  await services.history.get(executionId, principal);
  return services.outputs.readAll(principal, executionId, stream, services.config.maxFileTransferBytes);
}
