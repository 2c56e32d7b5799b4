/** What the tools that run code in a session say about code that waits for input. */
export const WAITING_HELP =
  'Code that blocks reading stdin (input(), read, a Y/n question) does not hang until the timeout: the send ' +
  'returns waiting_for_input=true with the prompt, and send_to_session {session_id, input} answers it and ' +
  'goes on with that code; send_to_session {session_id, interrupt: true} interrupts it instead (the state is ' +
  'kept). Another code send is refused until then. ';
