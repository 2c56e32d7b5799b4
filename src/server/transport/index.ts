// Framing for MCP transports: frames of any size and shape are split with bounded memory and
// answered as JSON-RPC 2.0 says, so no input can end the connection or leave a request unanswered.

export {
  BATCH_REFUSED,
  classifyOversize,
  classifyText,
  classifyValue,
  type ErrorReply,
  type Verdict,
} from './frames.js';
export { type Frame, LineSplitter, WINDOW_BYTES } from './lines.js';
export { type FramedStdioOptions, FramedStdioTransport } from './stdio.js';
