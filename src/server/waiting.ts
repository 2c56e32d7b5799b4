import { z } from 'zod';

/** A send whose code blocks reading input returns at once, saying so (send_to_session, execute_code). */
export const waitingFields = {
  waiting_for_input: z
    .literal(true)
    .optional()
    .describe(
      'present when the code is blocked reading its input: the send returned without waiting for it; answer ' +
        'with send_to_session {session_id, input}',
    ),
  prompt: z.string().optional().describe('with waiting_for_input: the last line of output before the read'),
};

export const WAITING_HELP =
  'Code that blocks reading stdin (input(), read, a Y/n question) does not hang until the timeout: the send ' +
  'returns waiting_for_input=true with the prompt, and send_to_session {session_id, input} answers it and ' +
  'goes on with that code; send_to_session {session_id, interrupt: true} interrupts it instead (the state is ' +
  'kept). Another code send is refused until then. ';
