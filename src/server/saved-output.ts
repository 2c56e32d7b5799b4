// Output past the truncation cap, kept so long work loses nothing (the results' `output_saved`
// field is in results/): reading it back — read_file {execution_id, path} pages it,
// resources/read of codexec://exec/<id>/stdout returns it whole. Only the principal that ran
// the execution finds it: the execution log is asked first (history.get), so another principal's
// id fails exactly like an unknown one.
import type { SavedSlice, SavedStreamName } from '../outputs/index.js';
import type { Services } from './services.js';

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
