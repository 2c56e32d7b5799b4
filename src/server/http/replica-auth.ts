import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';

/** The headers a replica sends instead of the caller's bearer token (which never leaves the first). */
export const SIGNED = {
  principal: 'x-codexec-replica-principal',
  time: 'x-codexec-replica-time',
  nonce: 'x-codexec-replica-nonce',
  signature: 'x-codexec-replica-signature',
} as const;

/** A signed request older or newer than this (either replica's clock) is refused. */
export const SIGNED_WINDOW_MS = 30_000;
/** Signatures remembered to refuse a replay; past it the oldest are forgotten (only floods get there). */
const REMEMBERED = 100_000;
/** A principal as token files name them (and `default`, `local`): no separator can hide in it. */
const PRINCIPAL = /^[A-Za-z0-9._-]{1,64}$/;
const NONCE = /^[0-9a-f]{32}$/;
const SIGNATURE = /^[0-9a-f]{64}$/;

/** What a signed request is: its method, its path (with any query) and its body's bytes. */
export interface SignedParts {
  readonly method: string;
  readonly path: string;
  readonly body: Uint8Array;
}

/**
 * Requests between replicas: one replica names the caller's principal, a timestamp and a nonce,
 * with an HMAC-SHA256 under the replicas' shared key over those, the method, the path and the
 * body's SHA-256. The receiver serves the request as that principal only when the HMAC verifies,
 * the timestamp is within SIGNED_WINDOW_MS of its clock and the signature was not seen before.
 */
export class ReplicaAuth {
  /** Signature → when it may be forgotten (insertion order is expiry order). */
  private readonly seen = new Map<string, number>();

  constructor(
    private readonly key: Uint8Array,
    private readonly now: () => number = Date.now,
  ) {}

  /** The headers that make `parts` a request from a replica on behalf of `principal`. */
  sign(parts: SignedParts, principal: string): Record<string, string> {
    const time = String(this.now());
    const nonce = randomBytes(16).toString('hex');
    return {
      [SIGNED.principal]: principal,
      [SIGNED.time]: time,
      [SIGNED.nonce]: nonce,
      [SIGNED.signature]: this.mac(parts, principal, time, nonce).toString('hex'),
    };
  }

  /** Whether a request claims to come from a replica (then it is verified, never served by token). */
  static claims(headers: IncomingHttpHeaders): boolean {
    return Object.values(SIGNED).some((name) => headers[name] !== undefined);
  }

  /** The principal a signed request is served as, or undefined when anything about it is off. */
  verify(parts: SignedParts, headers: IncomingHttpHeaders): string | undefined {
    const principal = single(headers[SIGNED.principal]);
    const time = single(headers[SIGNED.time]);
    const nonce = single(headers[SIGNED.nonce]);
    const signature = single(headers[SIGNED.signature]);
    if (!principal || !time || !nonce || !signature) return undefined;
    if (!PRINCIPAL.test(principal) || !/^\d{1,16}$/.test(time) || !NONCE.test(nonce)) return undefined;
    if (!SIGNATURE.test(signature)) return undefined;
    const now = this.now();
    if (Math.abs(now - Number(time)) > SIGNED_WINDOW_MS) return undefined;
    const expected = this.mac(parts, principal, time, nonce);
    if (!timingSafeEqual(expected, Buffer.from(signature, 'hex'))) return undefined;
    this.forget(now);
    if (this.seen.has(signature)) return undefined; // a replay, within the window
    this.seen.set(signature, now + 2 * SIGNED_WINDOW_MS);
    if (this.seen.size > REMEMBERED) this.seen.delete(this.seen.keys().next().value as string);
    return principal;
  }

  private mac(parts: SignedParts, principal: string, time: string, nonce: string): Buffer {
    const digest = createHash('sha256').update(parts.body).digest('hex');
    return createHmac('sha256', this.key)
      .update(['codexec-replica-1', parts.method, parts.path, principal, time, nonce, digest].join('\n'))
      .digest();
  }

  private forget(now: number): void {
    for (const [signature, until] of this.seen) {
      if (until > now) break;
      this.seen.delete(signature);
    }
  }
}

function single(value: string | string[] | undefined): string | undefined {
  return typeof value === 'string' ? value : undefined;
}
