import type { IncomingMessage, ServerResponse } from 'node:http';

/** A body over the limit: answered 413 before anything parses it. */
export class BodyTooLarge extends Error {}

/** Read a request body, stopping (and failing) as soon as it passes `limit` bytes. */
export async function readBody(req: IncomingMessage, limit: number): Promise<Buffer> {
  const declared = Number(req.headers['content-length'] ?? Number.NaN);
  if (declared > limit) throw new BodyTooLarge();
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > limit) throw new BodyTooLarge();
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
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
