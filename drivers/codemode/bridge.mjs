// Code mode for node and typescript runs (loaded with --import before the program): the globals
// callMCPTool, discoverMCPTools, searchTools, getToolSchema and llm (ask, think), talking to
// codexec's bridge over
// the run's Unix socket (CODEXEC_BRIDGE_SOCKET) with the run's token (CODEXEC_BRIDGE_TOKEN).
import { createConnection } from 'node:net';

const path = process.env.CODEXEC_BRIDGE_SOCKET;
const token = process.env.CODEXEC_BRIDGE_TOKEN;
// Not handed down to the processes the program starts.
delete process.env.CODEXEC_BRIDGE_SOCKET;
delete process.env.CODEXEC_BRIDGE_TOKEN;

let socket;
let nextId = 1;
let buffered = '';
const pending = new Map();

function failAll(message) {
  for (const { reject } of pending.values()) reject(new Error(`codexec bridge: ${message}`));
  pending.clear();
  socket = undefined;
}

function connection() {
  if (socket) return socket;
  socket = createConnection(path);
  socket.setEncoding('utf8');
  socket.write(`${JSON.stringify({ token })}\n`);
  socket.on('data', (chunk) => {
    buffered += chunk;
    for (let at = buffered.indexOf('\n'); at !== -1; at = buffered.indexOf('\n')) {
      const message = JSON.parse(buffered.slice(0, at));
      buffered = buffered.slice(at + 1);
      const waiting = pending.get(message.id);
      if (!waiting) continue;
      pending.delete(message.id);
      if (message.error)
        waiting.reject(Object.assign(new Error(message.error.message), { code: message.error.code }));
      else waiting.resolve(message.result);
    }
    // Idle, the connection does not keep the program alive.
    if (pending.size === 0) socket?.unref();
  });
  socket.on('error', (error) => failAll(error.message));
  socket.on('close', () => failAll('the connection closed'));
  return socket;
}

function request(method, params) {
  if (!path || !token)
    return Promise.reject(new Error('codexec bridge: this run was started without code mode'));
  const id = nextId++;
  const promise = new Promise((resolve, reject) => pending.set(id, { resolve, reject }));
  const open = connection();
  open.ref();
  open.write(`${JSON.stringify({ id, method, params })}\n`);
  return promise;
}

/** A tool's answer as a value: its structured content, else its text (parsed when it is JSON). */
function answerOf(name, outcome) {
  const texts = outcome.content.filter((item) => item.type === 'text').map((item) => item.text);
  if (outcome.isError)
    throw Object.assign(new Error(`${name} failed: ${texts.join('\n')}`), { code: 'TOOL_ERROR' });
  if (outcome.structuredContent !== undefined) return outcome.structuredContent;
  if (texts.length === 1 && outcome.content.length === 1) {
    try {
      return JSON.parse(texts[0]);
    } catch {
      return texts[0];
    }
  }
  return outcome.content;
}

globalThis.callMCPTool = async (name, args = {}) => answerOf(name, await request('call', { name, args }));
globalThis.discoverMCPTools = (options = {}) =>
  request('discover', options.search === undefined ? {} : { search: options.search });
globalThis.searchTools = (query, limit = 10) => request('search', { query, limit });
globalThis.getToolSchema = (name) => request('schema', { name });
/** The client's model, through codexec (enable_sampling): a prompt in, its text out. */
globalThis.llm = {
  ask: (prompt) => request('sample', { messages: [{ role: 'user', content: String(prompt) }] }),
  think: ({ messages, systemPrompt, maxTokens } = {}) =>
    request('sample', {
      messages,
      ...(systemPrompt !== undefined && { systemPrompt }),
      ...(maxTokens !== undefined && { maxTokens }),
    }),
};
