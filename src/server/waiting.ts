/** What the tools that run code in a session say about code that waits for input. */
export const WAITING_HELP =
  'Code waiting on stdin (input(), read, a Y/n prompt) returns waiting_for_input=true with the prompt: ' +
  'answer with {session_id, input}, or stop it with {session_id, interrupt: true}; other code is refused ' +
  'until then. ';
