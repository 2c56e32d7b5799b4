// What a client asks the proxy for: the `host:port` of a CONNECT, or an absolute URI's authority,
// read strictly. A host is a DNS name or an IP literal in its usual text; what the system resolver
// would also read as an address (`127.1`, `0x7f000001`, `2130706433`) is refused, so no name the
// rules compare by text turns into an address they never saw.
import { isIP } from 'node:net';

export interface Target {
  /** Lowercase, no brackets; a trailing dot kept as asked (the rules ignore it). */
  readonly host: string;
  readonly port: number;
}

const LABEL = /^[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?$/;
/** A last label of digits, or hex, reads as (part of) an IPv4 address to inet_aton. */
const NUMERIC = /^(?:\d+|0x[0-9a-f]*)$/;

/** `host:port` or `[v6]:port`; the port may be left out only when `fallback` is given. */
export function parseAuthority(text: string, fallback?: number): Target | undefined {
  const parts = /^(?:\[([0-9a-f:.]+)\]|([^:[\]]+))(?::(\d{1,5}))?$/.exec(text.toLowerCase());
  if (!parts) return undefined;
  const [, v6, other, digits] = parts;
  const port = digits === undefined ? fallback : Number(digits);
  if (port === undefined || port < 1 || port > 65535) return undefined;
  if (v6 !== undefined) return isIP(v6) === 6 ? { host: v6, port } : undefined;
  const host = other as string;
  if (isIP(host) === 4) return { host, port };
  const labels = (host.endsWith('.') ? host.slice(0, -1) : host).split('.');
  if (host.length > 254 || !labels.every((label) => LABEL.test(label))) return undefined;
  if (NUMERIC.test(labels[labels.length - 1] as string)) return undefined;
  return { host, port };
}

/** `host:port`, brackets around IPv6: as a message or a Host header shows it. */
export function shown(target: Target): string {
  return `${isIP(target.host) === 6 ? `[${target.host}]` : target.host}:${target.port}`;
}

/** Whether two targets are the same host and port (case and a trailing dot aside). */
export function sameTarget(a: Target, b: Target): boolean {
  const bare = (host: string) => (host.endsWith('.') ? host.slice(0, -1) : host);
  return a.port === b.port && bare(a.host) === bare(b.host);
}
