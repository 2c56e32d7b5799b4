// Output past the truncation cap, kept so long work loses nothing (the results' `output_saved`
// field is in results/): reading it back — read_file {execution_id, path} pages it,
// resources/read of codexec://exec/<id>/stdout returns it whole. Only the principal that ran
// the execution finds it: the execution log is asked first (history.get), so another principal's
// id fails exactly like an unknown one.

import type { Config } from '../config/index.js';
import type { SavedSlice, SavedStreamName } from '../outputs/index.js';
import type { Services } from './services.js';

/** The sentence tool descriptions add about truncated output. */
export function savedHelp(config: Pick<Config, 'output' | 'maxSavedOutputBytes'>): string {
  const cut = `Output past ${thousands(config.output.maxChars)} characters per stream is cut at line ends to its start and end`;
  if (config.maxSavedOutputBytes === 0) return `${cut}.`;
  return `${cut}; the line under the cut names the read_file call that pages the rest.`;
}

/**
 * 100000 as "100,000". Not toLocaleString: its first call maps ICU's locale data, ~6 MB more
 * resident for the life of every stdio server, which writes these descriptions at start-up.
 */
function thousands(n: number): string {
  return String(n).replace(/\B(?=(\d{3})+(?!\d))/g, ',');
}

/** read_file's slice of saved output when no length is asked (at most CODEXEC_MAX_FILE_TRANSFER_BYTES). */
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
