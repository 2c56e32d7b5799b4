// HTTPS to a credential's host (CODEXEC_CREDENTIALS): the one place the proxy reads inside TLS.
// The CONNECT is answered, the client's TLS ends here with a certificate the proxy's CA signed for
// that host, and each request read from it goes on over a TLS connection of the proxy's own (the
// origin's certificate checked against the server's trust store) to an address the lane admitted.
// A request may carry a credential's placeholder in that credential's header alone, which then
// holds the value as its template says; a placeholder anywhere else is refused. Answers come back
// with every credential value of the host masked to its placeholder, uncompressed so it can be.
import {
  type ClientRequest,
  createServer,
  request as httpRequest,
  type IncomingMessage,
  type ServerResponse,
} from 'node:http';
import { isIP, type Socket } from 'node:net';
import { Transform, type TransformCallback } from 'node:stream';
import { TLSSocket, connect as tlsConnect } from 'node:tls';
import { createBrotliDecompress, createGunzip, createInflate } from 'node:zlib';
import { endToEnd, isoTime } from '../util/index.js';
import { type Admission, codeOf, dial } from './admit.js';
import { answerPlain, answerRaw, recordRefusal, refusal } from './answer.js';
import type { Credential, Credentials, Misplaced } from './credentials.js';
import { hostHeader, passHead } from './forward.js';
import { shown, type Target } from './target.js';
import type { LaneContext, LaneUser } from './types.js';

type Admitted = Extract<Admission, { allowed: true }>;

/** Answer the CONNECT and serve the requests of the TLS connection it opens. */
export async function intercept(
  lane: LaneContext & { readonly credentials: Credentials },
  user: LaneUser,
  target: Target,
  admission: Admitted,
  client: Socket,
  head: Buffer,
): Promise<void> {
  let context: Awaited<ReturnType<Awaited<Credentials['ca']>['contextFor']>>;
  try {
    context = await (await lane.credentials.ca).contextFor(target.host);
  } catch (error) {
    return answerRaw(client, 502, refusal(shown(target), 502, `no certificate for it (${codeOf(error)})`));
  }
  if (client.destroyed) return;
  client.setTimeout(0);
  client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
  if (head.length > 0) client.unshift(head);
  const secure = new TLSSocket(client, {
    isServer: true,
    secureContext: context,
    ALPNProtocols: ['http/1.1'],
  });
  secure.on('error', () => secure.destroy());
  lane.track(secure as unknown as Socket);
  const credentials = lane.credentials.for(target.host, target.port);
  const inner = createServer({ requestTimeout: 0 }, (req, res) => {
    void passOn(lane, user, target, admission, credentials, req, res).catch((error: unknown) =>
      answerPlain(res, 502, `codexec egress: ${codeOf(error)}\n`),
    );
  });
  // No upgrade (WebSocket) through an intercepted host: node closes such a connection.
  inner.emit('connection', secure);
}

/** One request from the client: checked, its credential put in, sent on, answered masked. */
async function passOn(
  lane: LaneContext & { readonly credentials: Credentials },
  user: LaneUser,
  target: Target,
  admission: Admitted,
  credentials: readonly Credential[],
  req: IncomingMessage,
  res: ServerResponse,
): Promise<void> {
  const at = isoTime();
  const method = req.method ?? 'GET';
  const refuse = (status: 403 | 502 | 503, reason: string) => {
    recordRefusal(user, { host: target.host, port: target.port, method, at }, status, reason, {});
    answerPlain(res, status, refusal(shown(target), status, reason));
  };
  const url = req.url ?? '/';
  if (!url.startsWith('/')) return refuse(403, 'a request inside the tunnel names its path only');
  const host = hostHeader(req, target, 443);
  if (host === undefined) return refuse(403, 'Host header differs from the CONNECT target');
  const headers = withValues(endToEnd(req.rawHeaders, 'host', 'accept-encoding'), credentials);
  const misplaced = lane.credentials.misplaced(url, headers);
  if (misplaced) return refuse(403, misplacedReason(misplaced, credentials));
  const release = lane.acquire();
  if (!release) return refuse(503, 'too many connections open through this proxy');
  res.once('close', release);
  let socket: Socket;
  try {
    ({ socket } = await dial(lane, admission.addresses, target.port));
  } catch (error) {
    return refuse(502, `could not connect (${codeOf(error)})`);
  }
  // The origin's certificate, checked for the name the client asked for.
  const secure = tlsConnect({
    socket,
    ...(isIP(target.host) === 0 && { servername: target.host }),
    host: target.host,
    ALPNProtocols: ['http/1.1'],
  });
  secure.on('error', () => {});
  // Answers come uncompressed, so that a value the origin echoes can be masked.
  const sent = ['Host', host, ...headers, 'Accept-Encoding', 'identity', 'Connection', 'close'];
  if (req.headers['transfer-encoding'] !== undefined) sent.push('Transfer-Encoding', 'chunked');
  relayMasked(
    req,
    res,
    httpRequest({ method, path: url, headers: sent, setHost: false, createConnection: () => secure }),
    credentials,
  );
}

/** Each credential of the host in its own header, holding the value as its template says. */
function withValues(headers: readonly string[], credentials: readonly Credential[]): string[] {
  return headers.map((text, index) => {
    if (index % 2 === 0) return text;
    const name = (headers[index - 1] as string).toLowerCase();
    const own = credentials.find((it) => it.header.name === name && text.includes(it.placeholder));
    return own ? `${own.header.before}${own.value}${own.header.after}` : text;
  });
}

function misplacedReason({ credential, where }: Misplaced, credentials: readonly Credential[]): string {
  return credentials.includes(credential)
    ? `${credential.name}'s placeholder may only be sent in its ${credential.header.name} header, not in ${where}`
    : `${credential.name}'s placeholder may not be sent to this host (in ${where})`;
}

/** The request on to the origin, and its answer back with the credentials' values masked. */
function relayMasked(
  req: IncomingMessage,
  res: ServerResponse,
  upstream: ClientRequest,
  credentials: readonly Credential[],
): void {
  upstream.on('error', (error) =>
    answerPlain(res, 502, `codexec egress: the origin failed (${codeOf(error)})\n`),
  );
  // An origin that switches protocols unasked: nothing to mask it with, so nothing passes.
  upstream.on('upgrade', (answer, socket) => {
    socket.destroy();
    answer.destroy();
    answerPlain(
      res,
      502,
      'codexec egress: the origin switched protocols, which the proxy does not relay here\n',
    );
  });
  upstream.on('response', (answer) => {
    answer.on('error', () => res.destroy());
    // Asked uncompressed; an origin that compresses all the same is decoded here, to be masked.
    const decoding = decoder(answer.headers['content-encoding']);
    if (decoding === null) {
      answer.destroy();
      return answerPlain(
        res,
        502,
        "codexec egress: the origin's answer is in an encoding the proxy cannot mask\n",
      );
    }
    // A masked body changes length: it goes chunked (node frames it), without the origin's
    // length or encoding; names, values and the reason phrase are masked as the body is.
    const masked = maskHeaders(
      endToEnd(answer.rawHeaders, 'content-length', 'content-encoding'),
      credentials,
    );
    if (!passHead(res, answer, mask(answer.statusMessage ?? '', credentials), masked)) return;
    const body = decoding ? answer.pipe(decoding) : answer;
    decoding?.on('error', () => res.destroy());
    body.pipe(new Masker(credentials)).pipe(res);
  });
  req.on('error', () => upstream.destroy());
  res.on('close', () => {
    if (!res.writableFinished) upstream.destroy();
  });
  req.pipe(upstream);
}

/** Each value of `credentials` in the header values replaced by its placeholder. */
function maskHeaders(raw: readonly string[], credentials: readonly Credential[]): string[] {
  return raw.map((text) => mask(text, credentials));
}

/**
 * How to undo a Content-Encoding: undefined for none (identity), a zlib stream for gzip, deflate
 * and br (in the order the origin applied them, undone last first), null for another.
 */
function decoder(header: string | undefined): Transform | undefined | null {
  const codings = (header ?? '')
    .split(',')
    .map((coding) => coding.trim().toLowerCase())
    .filter((coding) => coding !== '' && coding !== 'identity');
  if (codings.length === 0) return undefined;
  if (codings.length > 1) return null;
  const coding = codings[0];
  if (coding === 'gzip' || coding === 'x-gzip') return createGunzip();
  if (coding === 'deflate') return createInflate();
  if (coding === 'br') return createBrotliDecompress();
  return null;
}

function mask(text: string, credentials: readonly Credential[]): string {
  let out = text;
  for (const credential of credentials) out = out.split(credential.value).join(credential.placeholder);
  return out;
}

/**
 * A body with each value replaced by its placeholder, also where one spans two chunks: the last
 * (longest value − 1) bytes wait for the next chunk.
 */
class Masker extends Transform {
  readonly #pairs: ReadonlyArray<readonly [Buffer, Buffer]>;
  readonly #keep: number;
  #carry: Buffer = Buffer.alloc(0);

  constructor(credentials: readonly Credential[]) {
    super();
    this.#pairs = credentials.map(
      (credential) => [Buffer.from(credential.value), Buffer.from(credential.placeholder)] as const,
    );
    this.#keep = Math.max(0, ...this.#pairs.map(([value]) => value.length - 1));
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, done: TransformCallback): void {
    const data = this.#replace(Buffer.concat([this.#carry, chunk]));
    const cut = Math.max(0, data.length - this.#keep);
    this.#carry = data.subarray(cut);
    done(null, data.subarray(0, cut));
  }

  override _flush(done: TransformCallback): void {
    done(null, this.#replace(this.#carry));
  }

  #replace(data: Buffer): Buffer {
    let out = data;
    for (const [value, placeholder] of this.#pairs) {
      let at = out.indexOf(value);
      if (at === -1) continue;
      const parts: Buffer[] = [];
      let from = 0;
      while (at !== -1) {
        parts.push(out.subarray(from, at), placeholder);
        from = at + value.length;
        at = out.indexOf(value, from);
      }
      parts.push(out.subarray(from));
      out = Buffer.concat(parts);
    }
    return out;
  }
}
