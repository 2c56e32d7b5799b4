import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';

/** A body over the limit: answered 413 before anything parses it. */
export class BodyTooLarge extends Error {}
/** The body would pass what its principal may have in flight (the bytes it took are given back). */
export class BudgetSpent extends Error {}

/**
 * Read a request body, stopping (and failing) as soon as it passes `limit` bytes, or as soon as
 * `take` refuses a chunk (its principal's bytes in flight): then what was taken is given back.
 */
export async function readBody(
  req: IncomingMessage,
  limit: number,
  budget?: { take(bytes: number): boolean; release(bytes: number): void },
): Promise<Buffer> {
  const declared = Number(req.headers['content-length'] ?? Number.NaN);
  if (declared > limit) throw new BodyTooLarge();
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of req as AsyncIterable<Buffer>) {
      if (size + chunk.length > limit) throw new BodyTooLarge();
      if (budget && !budget.take(chunk.length)) throw new BudgetSpent();
      size += chunk.length;
      chunks.push(chunk);
    }
  } catch (error) {
    if (budget) budget.release(size); // what was taken, chunk by chunk
    throw error;
  }
  return Buffer.concat(chunks);
}

/** A refused request's body is dropped up to this many bytes; past them it is no longer read. */
const DROP_BYTES = 1024 * 1024;
/** How long a refused request's body may take to end before its connection is cut. */
const DROP_MS = 1000;

/**
 * The rest of a refused request's body: node:http reads it and throws it away to find the next
 * request on the connection. Past DROP_BYTES the connection stops being read (the client is held
 * back by TCP), and one whose body has not ended within DROP_MS is cut. Not at once: closing a
 * socket with bytes unread resets it, and the answer could be lost with it.
 */
export function dropBody(req: IncomingMessage): void {
  // Taken now: node:http detaches it from `req` once the answer is sent (and has when it is gone).
  const socket = req.socket as Socket | null;
  if (!socket || socket.destroyed) return;
  let dropped = 0;
  let held = false;
  const count = (chunk: Buffer) => {
    dropped += chunk.length;
    if (dropped <= DROP_BYTES || held) return;
    held = true;
    socket.pause();
  };
  const timer = setTimeout(() => {
    if (!req.complete) socket.destroy();
  }, DROP_MS).unref();
  socket.on('data', count);
  const done = () => {
    clearTimeout(timer);
    socket.off('data', count);
    if (held && req.complete && !socket.destroyed) socket.resume(); // it ended in the last bytes read
  };
  req.once('end', done);
  socket.once('close', done);
}

/**
 * The SDK handler is web-standard (Request → Response); this is the whole bridge to node:http.
 * `signal` aborts when the client goes away, which cancels that client's exchange only.
 */
export function toWebRequest(req: IncomingMessage, body: Buffer | undefined, signal: AbortSignal): Request {
  const headers = new Headers();
  for (const [name, value] of Object.entries(req.headers)) {
    if (value === undefined) continue;
    for (const item of Array.isArray(value) ? value : [value]) headers.append(name, item);
  }
  const url = new URL(req.url ?? '/', `http://${req.headers.host ?? 'localhost'}`);
  return new Request(url, {
    method: req.method ?? 'GET',
    headers,
    signal,
    ...(body !== undefined && body.length > 0 && { body }),
  });
}

const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'transfer-encoding']);

/** Write a web Response to node:http, streaming the body (SSE stays a stream). */
export async function sendWebResponse(res: ServerResponse, response: Response): Promise<void> {
  const headers: Record<string, string | string[]> = {};
  response.headers.forEach((value, name) => {
    // Hop-by-hop headers are node:http's to set: the SDK's SSE `Connection: keep-alive` would keep
    // a connection the client asked to close open until the keep-alive timeout.
    if (!HOP_BY_HOP.has(name)) headers[name] = value;
  });
  const cookies = response.headers.getSetCookie();
  if (cookies.length > 0) headers['set-cookie'] = cookies;
  res.writeHead(response.status, headers);
  if (!response.body) {
    res.end();
    return;
  }
  // A stream's head goes now: a session's GET stream may say nothing for a long while, and its
  // client waits for the head to know the stream is open.
  if (response.headers.get('content-type')?.startsWith('text/event-stream')) res.flushHeaders();
  const reader = response.body.getReader();
  res.once('close', () => void reader.cancel().catch(() => {}));
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      if (!res.write(value)) {
        await new Promise((resolve) => {
          res.once('drain', resolve);
          res.once('close', resolve);
        });
      }
    }
  } catch {
    // the client went away mid-stream, or the handler aborted it: nothing more to send
  }
  res.end();
}
