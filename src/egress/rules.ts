// What the egress proxy of CODEXEC_NETWORK=allowlist lets code reach: host rules from
// CODEXEC_ALLOWED_DOMAINS and CODEXEC_DENIED_DOMAINS (comma lists), a call's own `allowed_domains`
// (which narrows, never widens), and the addresses a name resolves to, checked by the proxy itself
// before it connects.
//
// A rule is `name`, `*.name` (any name below it, not the name itself), an IP literal, each with an
// optional `:port` (`[v6]:port` for IPv6). Without a port an allowing rule allows 443 and 80 only
// (an allowlist is for HTTPS and HTTP through the proxy; anything else is named with its port),
// while a denying rule denies every port: what an operator denies by name stays denied whatever
// port another rule opens. Names compare case-insensitively, without a trailing dot.
import { isIP } from 'node:net';
import { isPublicAddress } from './addresses.js';

export interface HostRule {
  /** Lowercase, no trailing dot: a name, the suffix of a wildcard, or an IP literal. */
  readonly host: string;
  /** `*.host`: names below host (not host itself). */
  readonly wildcard: boolean;
  /** undefined: 443 and 80 when it allows, every port when it denies. */
  readonly port?: number;
  /** As written, for messages and logs. */
  readonly text: string;
}

const DEFAULT_PORTS: readonly number[] = [443, 80];
const LABEL = /^(?!-)[a-z0-9_-]{1,63}(?<!-)$/;

/**
 * The rules of a comma list; a malformed entry throws `refusal` of a message naming `setting` and
 * the entry (the caller's error: a setting's stops start-up, a call's argument is bad input).
 */
export function parseRules(
  list: string,
  setting: string,
  refusal: (message: string) => Error = (message) => new RangeError(message),
): HostRule[] {
  return list
    .split(',')
    .map((entry) => entry.trim())
    .filter((entry) => entry !== '')
    .map((entry) => {
      const rule = parseRule(entry);
      if (typeof rule === 'string') throw refusal(`${setting}: "${entry}" ${rule}`);
      return rule;
    });
}

/** A rule, or why the entry is not one. */
function parseRule(text: string): HostRule | string {
  let host = text.toLowerCase();
  let port: number | undefined;
  const bracketed = /^\[([^\]]+)\](?::(\d+))?$/.exec(host);
  if (bracketed) {
    host = bracketed[1] as string;
    if (isIP(host) !== 6) return 'is not an IPv6 address in brackets';
    if (bracketed[2] !== undefined) port = Number(bracketed[2]);
  } else if (isIP(host) !== 6) {
    const colon = host.lastIndexOf(':');
    if (colon !== -1) {
      const digits = host.slice(colon + 1);
      if (!/^\d+$/.test(digits)) return 'has a port that is not a number';
      port = Number(digits);
      host = host.slice(0, colon);
    }
  }
  if (port !== undefined && (port < 1 || port > 65535)) return 'has a port outside 1-65535';
  if (host.endsWith('.')) host = host.slice(0, -1);
  const wildcard = host.startsWith('*.');
  if (wildcard) host = host.slice(2);
  if (isIP(host) !== 0) {
    if (wildcard) return 'is a wildcard of an IP address';
    return { host, wildcard, ...(port !== undefined && { port }), text };
  }
  const labels = host.split('.');
  if (host === '' || !labels.every((label) => LABEL.test(label)))
    return 'is not a host name, *.name, an IP address, or one of them with :port';
  // `*.com` would open a whole top-level domain: a wildcard needs two labels below it at least.
  if (wildcard && labels.length < 2) return 'is a wildcard of a top-level domain';
  return { host, wildcard, ...(port !== undefined && { port }), text };
}

/** Whether an allowing `rule` names `host` at `port` (host: lowercase, no trailing dot). */
export function matches(rule: HostRule, host: string, port: number): boolean {
  const ports = rule.port === undefined ? DEFAULT_PORTS : [rule.port];
  return ports.includes(port) && namesHost(rule, host);
}

/** Whether a denying `rule` names `host` at `port`: without a port of its own, at any port. */
export function denies(rule: HostRule, host: string, port: number): boolean {
  return (rule.port === undefined || rule.port === port) && namesHost(rule, host);
}

function namesHost(rule: HostRule, host: string): boolean {
  // `*.0.0.1` is a name rule: it must not name the address 127.0.0.1 by its text.
  if (rule.wildcard) return isIP(host) === 0 && host.endsWith(`.${rule.host}`);
  return host === rule.host;
}

export interface Decision {
  readonly allowed: boolean;
  /** The rule that decided (the denying one, or the allowing one), as written. */
  readonly rule?: string;
  /** Why, in words, when refused. */
  readonly reason?: string;
  /**
   * Refused only because the allowed list does not name the target (no denied rule, no call's
   * list, no internal address): the one refusal a person may be asked to lift.
   */
  readonly askable?: true;
}

/**
 * The server's lists, narrowed by a call's: a target is reachable when the server's allowed list
 * names it, no denied rule does, and (when the call gave one) the call's list names it too.
 */
export class EgressRules {
  constructor(
    private readonly allowed: readonly HostRule[],
    private readonly denied: readonly HostRule[] = [],
    /** Each call's (or session's) own list: a target must be on every one of them too. */
    private readonly narrowings: readonly (readonly HostRule[])[] = [],
  ) {}

  /** These rules narrowed by a call's `allowed_domains`: never wider than before. */
  narrow(call: readonly HostRule[]): EgressRules {
    return new EgressRules(this.allowed, this.denied, [...this.narrowings, call]);
  }

  /** The decision for a name (or IP literal) and port, before any resolution. */
  decide(target: string, port: number): Decision {
    const host = normalize(target);
    const deny = this.denied.find((rule) => denies(rule, host, port));
    if (deny) return { allowed: false, rule: deny.text, reason: `denied by ${deny.text}` };
    const allow = this.allowed.find((rule) => matches(rule, host, port));
    if (!allow)
      return { allowed: false, reason: `${host}:${port} is not on the allowed list`, askable: true };
    if (this.narrowings.some((list) => !list.some((rule) => matches(rule, host, port))))
      return {
        allowed: false,
        rule: allow.text,
        reason: `${host}:${port} is not in this call's allowed_domains`,
      };
    return { allowed: true, rule: allow.text };
  }

  /**
   * After resolution: an address the proxy would connect to for `target`. An address that is not
   * public is refused unless an exact rule (no wildcard) names the target itself: a public name
   * resolving to 127.0.0.1, 10.x or ::ffff:10.x (DNS rebinding) reaches nothing of the host's network.
   */
  decideAddress(target: string, port: number, address: string): Decision {
    const named = this.decide(target, port);
    if (!named.allowed || isPublicAddress(address)) return named;
    const host = normalize(target);
    const exact = this.allowed.some((rule) => !rule.wildcard && matches(rule, host, port));
    if (exact) return named;
    return {
      allowed: false,
      rule: named.rule,
      reason: `${host} resolved to ${address}, an internal address; list ${host} itself to allow it`,
    };
  }
}

function normalize(host: string): string {
  const lower = host.toLowerCase().replace(/^\[(.*)\]$/, '$1');
  return lower.endsWith('.') ? lower.slice(0, -1) : lower;
}
