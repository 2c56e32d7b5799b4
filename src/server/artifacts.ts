// The artifact fields of the output schemas (execute_code, run_script, execute_command,
// send_to_session, get_execution_log): what the model reads about the files a run changed, and
// how it learns that the list was cut (engine/listing.ts).
import { z } from 'zod';

export const NAMES_HELP =
  'names as shown: a backslash is \\\\, an undecodable byte or a C0 control \\xNN, other invisible ' +
  'or bidi controls \\uXXXX; secrets masked as ***';

export const artifactsOmitted = z
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
