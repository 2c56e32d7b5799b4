// Output past the truncation cap, kept on disk per principal and execution, and paged back
// (read_file {execution_id, path}, codexec://exec/<id>/stdout); removed with the log entry.

export {
  EXECUTION_ID,
  type OutputSaved,
  SAVED_STREAMS,
  type SavedInfo,
  SavedOutputNotFoundError,
  SavedOutputs,
  SavedOutputTooLargeError,
  type SavedStreamName,
  savedBytes,
  TOTAL_FACTOR,
} from './saved.js';
export { type SavedSlice, sliceText } from './slice.js';
export { characterEnd, SavedStream } from './stream.js';
