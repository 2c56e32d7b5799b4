import { type IncomingMessage, request, type ServerResponse } from 'node:http';
import { request as requestTls } from 'node:https';

/** The request as it goes to the other replica: its headers are chosen (and signed) by the caller. */
export interface Outgoing {
  readonly url: URL;
  readonly method: string;
  /** Made per attempt: a retry is signed anew (the receiver refuses a signature it has seen). */
  readonly headers: () => Record<string, string>;
  readonly body: Buffer;
}

/**
 * `answered`: the other replica's answer went to the client, status, headers and a streamed body
 * (SSE stays a stream), or the client went away. `unreachable`: no answer came, the connection was refused
 * or reset before one; nothing was written to `res`.
 */
export type ProxyOutcome = 'answered' | 'unreachable';

/** How long connecting to another replica may take before it counts as gone. */
const CONNECT_TIMEOUT_MS = 5000;

/** Hop-by-hop headers are node:http's own to set, on each side. */
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'transfer-encoding', 'upgrade', 'proxy-connection']);

/**
 * Send `outgoing` and pipe its answer to `res` as it comes; resolves once the answer is over.
 * `signal` aborts when the client goes
 * away: the upstream request is cut, so the other replica cancels the exchange as its own
 * client's. A kept-alive connection the other side had just closed is retried once, fresh.
 */
export async function proxy(
  outgoing: Outgoing,
  res: ServerResponse,
  signal: AbortSignal,
): Promise<ProxyOutcome> {
  const first = await attempt(outgoing, res, signal);
  if (first !== 'stale') return first;
  const second = await attempt(outgoing, res, signal);
  return second === 'stale' ? 'unreachable' : second;
}

function attempt(
  outgoing: Outgoing,
  res: ServerResponse,
  signal: AbortSignal,
): Promise<ProxyOutcome | 'stale'> {
  return new Promise((resolve) => {
    const send = outgoing.url.protocol === 'https:' ? requestTls : request;
    const headers = { ...outgoing.headers(), 'content-length': String(outgoing.body.length) };
    const upstream = send(outgoing.url, { method: outgoing.method, headers }, (answer) => {
      relay(answer, res);
      res.once('close', () => {
        signal.removeEventListener('abort', cut);
        resolve('answered');
      });
    });
    const cut = () => upstream.destroy();
    // A host that drops packets would hold the call for the system's TCP timeout (minutes).
    upstream.once('socket', (socket) => {
      if (!socket.connecting) return; // a kept-alive connection
      const timer = setTimeout(() => upstream.destroy(new Error('connect timeout')), CONNECT_TIMEOUT_MS);
      socket.once('connect', () => clearTimeout(timer));
      socket.once('close', () => clearTimeout(timer));
    });
    upstream.on('error', (error: NodeJS.ErrnoException) => {
      if (res.headersSent) return; // the answer had begun: relay() ends it
      signal.removeEventListener('abort', cut);
      // Node's advice for kept-alive sockets: a reset on a reused one is the server's idle close.
      if (upstream.reusedSocket && error.code === 'ECONNRESET' && !signal.aborted) resolve('stale');
      else resolve(signal.aborted ? 'answered' : 'unreachable');
    });
    if (signal.aborted) upstream.destroy();
    else signal.addEventListener('abort', cut, { once: true });
    upstream.end(outgoing.body);
  });
}

/** Status, headers and body to the client; a body cut short is cut short for the client too. */
function relay(answer: IncomingMessage, res: ServerResponse): void {
  const headers: Record<string, string | string[]> = {};
  for (const [name, value] of Object.entries(answer.headers)) {
    if (value !== undefined && !HOP_BY_HOP.has(name)) headers[name] = value;
  }
  res.writeHead(answer.statusCode ?? 502, headers);
  answer.pipe(res);
  // The other replica died mid-answer: reset the client's connection rather than end the body
  // cleanly, so a cut JSON or SSE stream is not taken for a whole one.
  answer.once('aborted', () => res.destroy());
  answer.once('error', () => res.destroy());
  res.once('close', () => {
    if (!answer.complete) answer.destroy();
  });
}
