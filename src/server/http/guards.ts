const LOOPBACK = new Set(['127.0.0.1', '::1', 'localhost', '[::1]']);
/** Loopback names as a URL's `hostname` spells them (IPv6 in brackets). */
const LOOPBACK_HOSTNAMES = new Set(['localhost', '127.0.0.1', '[::1]']);
/** A Host header is a name or an IP literal and an optional port (RFC 9110 §7.2), nothing else. */
const HOST_SHAPE = /^(?:\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9._~-]+)(?::\d{1,5})?$/;

/** A host that only this machine can reach: the only kind `--no-auth` may bind. */
export function isLoopback(host: string): boolean {
  return LOOPBACK.has(host.toLowerCase()) || /^127\.\d+\.\d+\.\d+$/.test(host);
}

export interface Refusal {
  readonly status: number;
  readonly message: string;
  readonly headers?: Record<string, string>;
}

/** What the guards read off one request. */
export interface RequestHead {
  readonly host: string | undefined;
  readonly origin: string | undefined;
  /** The port the connection arrived on: a same-origin page names it. */
  readonly localPort: number | undefined;
}

/** The Host header as a URL (`http://<host>`), or undefined when it is absent, empty or malformed. */
export function parseHost(host: string | undefined): URL | undefined {
  if (!host || !HOST_SHAPE.test(host)) return undefined;
  try {
    return new URL(`http://${host}`);
  } catch {
    return undefined; // a port over 65535, a bad IPv6 literal
  }
}

/**
 * Every request needs a well-formed Host (400 otherwise, on any path: it is a bad request, not a
 * forbidden one; the server builds URLs from it).
 */
export function checkHost(head: RequestHead): Refusal | undefined {
  if (parseHost(head.host)) return undefined;
  const shown =
    head.host === undefined ? 'missing' : `malformed (${JSON.stringify(head.host.slice(0, 100))})`;
  return { status: 400, message: `Host header ${shown}: expected name[:port], e.g. 127.0.0.1:8765` };
}

/**
 * DNS rebinding: a page on evil.example resolving to 127.0.0.1 reaches a loopback server with its
 * own Host and Origin. On a loopback bind the Host must name loopback. A browser's Origin must be
 * listed in CODEXEC_HTTP_ALLOWED_ORIGINS, or, on a loopback bind, be this server's own origin
 * (http, a loopback name, the port the request came in on), which no rebinding page can have. No
 * Origin is allowed: non-browser clients (every MCP client today) send none. Call after checkHost.
 */
export function checkOrigins(
  head: RequestHead,
  loopbackBind: boolean,
  allowedOrigins: readonly string[],
): Refusal | undefined {
  const host = parseHost(head.host);
  if (loopbackBind && !(host && LOOPBACK_HOSTNAMES.has(host.hostname))) {
    return { status: 403, message: `Host ${head.host ?? '(none)'} is not a loopback name` };
  }
  const origin = head.origin;
  if (origin === undefined) return undefined;
  if (allowedOrigins.includes(origin.replace(/\/+$/, '').toLowerCase())) return undefined;
  if (loopbackBind && isSameLoopbackOrigin(origin, head.localPort)) return undefined;
  return { status: 403, message: `Origin ${origin} is not allowed (CODEXEC_HTTP_ALLOWED_ORIGINS)` };
}

function isSameLoopbackOrigin(origin: string, localPort: number | undefined): boolean {
  let url: URL;
  try {
    url = new URL(origin);
  } catch {
    return false; // `null` (opaque origins) and anything else that is not a URL
  }
  // An origin is scheme, host and port only; anything more is not what a browser sends.
  if (url.origin !== origin.replace(/\/+$/, '').toLowerCase()) return false;
  const port = url.port === '' ? 80 : Number(url.port);
  return url.protocol === 'http:' && LOOPBACK_HOSTNAMES.has(url.hostname) && port === localPort;
}
