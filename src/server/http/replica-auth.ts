import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';

/** The headers a replica sends instead of the caller's bearer token (which never leaves the first). */
export const SIGNED = {
  principal: 'x-codexec-replica-principal',
  time: 'x-codexec-replica-time',
  nonce: 'x-codexec-replica-nonce',
  target: 'x-codexec-replica-target',
  length: 'x-codexec-replica-length',
  digest: 'x-codexec-replica-sha256',
  signature: 'x-codexec-replica-signature',
} as const;

/** A signed request older or newer than this (either replica's clock) is refused. */
export const SIGNED_WINDOW_MS = 30_000;
/** A principal as token files name them (and `default`, `local`): no separator can hide in it. */
const PRINCIPAL = /^[A-Za-z0-9._-]{1,64}$/;
/** A replica id (host, pid, random part) as the registry writes it. */
const TARGET = /^[A-Za-z0-9._-]{1,128}$/;
const NONCE = /^[0-9a-f]{32}$/;
const HEX_256 = /^[0-9a-f]{64}$/;

/** What a signed request is: its method, its path (with any query) and its body's bytes. */
export interface SignedRequest {
  readonly method: string;
  readonly path: string;
  readonly body: Uint8Array;
}

/** Nonces used by any replica, kept until a signature carrying one is too old to be served anyway. */
export interface Nonces {
  /** True the first time `nonce` is claimed, by whichever replica; remembered at least until `untilMs`. */
  claim(nonce: string, untilMs: number): Promise<boolean>;
}

/** What a verified head promises: who is served, and the one body that may follow it. */
export interface Admitted {
  readonly principal: string;
  readonly length: number;
  readonly digest: Buffer;
}

/**
 * The headers that make `request` a call from a replica to replica `target` on behalf of
 * `principal`: an HMAC-SHA256 under the replicas' shared key over the method, the path, the
 * principal, the time, a nonce, the target and the body's length and SHA-256. Everything the
 * receiver needs to refuse it is in the head: it never reads a body it has not admitted.
 */
export function signRequest(
  key: Uint8Array,
  request: SignedRequest,
  principal: string,
  target: string,
  now: number = Date.now(),
): Record<string, string> {
  const head = {
    principal,
    time: String(now),
    nonce: randomBytes(16).toString('hex'),
    target,
    length: String(request.body.length),
    digest: createHash('sha256').update(request.body).digest('hex'),
  };
  return {
    [SIGNED.principal]: head.principal,
    [SIGNED.time]: head.time,
    [SIGNED.nonce]: head.nonce,
    [SIGNED.target]: head.target,
    [SIGNED.length]: head.length,
    [SIGNED.digest]: head.digest,
    [SIGNED.signature]: mac(key, request.method, request.path, head).toString('hex'),
  };
}

/**
 * Requests between replicas, as this replica (`self`) receives them. A head is admitted when its
 * HMAC verifies, it names this replica, its time is within SIGNED_WINDOW_MS of this clock and its
 * nonce was never claimed (the ledger is shared: a replay to another replica, or to this one after
 * a restart, finds it). Only then is the body read, no longer than the signed length, and it must
 * hash to the signed digest.
 */
export class ReplicaAuth {
  constructor(
    private readonly key: Uint8Array,
    private readonly self: string,
    private readonly nonces: Nonces,
    private readonly now: () => number = Date.now,
  ) {}

  /** The headers for a request to replica `target` on behalf of `principal`. */
  sign(request: SignedRequest, principal: string, target: string): Record<string, string> {
    return signRequest(this.key, request, principal, target, this.now());
  }

  /** Whether a request claims to come from a replica (then it is verified, never served by token). */
  static claims(headers: IncomingHttpHeaders): boolean {
    return Object.keys(headers).some((name) => name.startsWith('x-codexec-replica-'));
  }

  /** What a signed head admits, from the headers alone; undefined when anything about it is off. */
  async admit(method: string, path: string, headers: IncomingHttpHeaders): Promise<Admitted | undefined> {
    const head = parseHead(headers);
    if (!head || head.target !== this.self) return undefined;
    if (Math.abs(this.now() - Number(head.time)) > SIGNED_WINDOW_MS) return undefined;
    const expected = mac(this.key, method, path, head);
    if (!timingSafeEqual(expected, Buffer.from(head.signature, 'hex'))) return undefined;
    // Past twice the window no replica serves it whatever its clock says (within the window of ours).
    if (!(await this.nonces.claim(head.nonce, Number(head.time) + 2 * SIGNED_WINDOW_MS))) return undefined;
    return {
      principal: head.principal,
      length: Number(head.length),
      digest: Buffer.from(head.digest, 'hex'),
    };
  }

  /** Whether `body` is the one an admitted head signed for. */
  static matches(admitted: Admitted, body: Uint8Array): boolean {
    if (body.length !== admitted.length) return false;
    return timingSafeEqual(createHash('sha256').update(body).digest(), admitted.digest);
  }
}

interface Head {
  readonly principal: string;
  readonly time: string;
  readonly nonce: string;
  readonly target: string;
  readonly length: string;
  readonly digest: string;
}

function parseHead(headers: IncomingHttpHeaders): (Head & { signature: string }) | undefined {
  const field = (name: string) => {
    const value = headers[name];
    return typeof value === 'string' ? value : '';
  };
  const head = {
    principal: field(SIGNED.principal),
    time: field(SIGNED.time),
    nonce: field(SIGNED.nonce),
    target: field(SIGNED.target),
    length: field(SIGNED.length),
    digest: field(SIGNED.digest),
    signature: field(SIGNED.signature),
  };
  const wellFormed =
    PRINCIPAL.test(head.principal) &&
    /^\d{1,16}$/.test(head.time) &&
    NONCE.test(head.nonce) &&
    TARGET.test(head.target) &&
    /^\d{1,12}$/.test(head.length) &&
    HEX_256.test(head.digest) &&
    HEX_256.test(head.signature);
  return wellFormed ? head : undefined;
}

function mac(key: Uint8Array, method: string, path: string, head: Head): Buffer {
  const fields = [head.principal, head.time, head.nonce, head.target, head.length, head.digest];
  return createHmac('sha256', key)
    .update(['codexec-replica-2', method, path, ...fields].join('\n'))
    .digest();
}
