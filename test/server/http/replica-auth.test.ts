// Requests between replicas (src/server/http/replica-auth.ts): a head is admitted, before any body
// is read, only when the HMAC under the shared key verifies over method, path, principal, time,
// nonce, target replica and the body's length and SHA-256, it names this replica, its time is
// within 30 s and its nonce was never claimed; the body must then be the one signed for. The nonce
// ledger here is a set (the store's shared one is tested with PostgreSQL in test/store).
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  type Nonces,
  ReplicaAuth,
  SIGNED,
  SIGNED_WINDOW_MS,
  signRequest,
} from '../../../src/server/http/replica-auth.js';

const key = randomBytes(32);
const body = Buffer.from('{"jsonrpc":"2.0","id":1}');
const request = { method: 'POST', path: '/mcp', body };

/** A ledger of one process, as the store's is of all replicas. */
function ledger(): Nonces & { claimed: Map<string, number> } {
  const claimed = new Map<string, number>();
  return {
    claimed,
    async claim(nonce, untilMs) {
      if (claimed.has(nonce)) return false;
      claimed.set(nonce, untilMs);
      return true;
    },
  };
}

const receiver = (nonces = ledger(), now: () => number = Date.now) => new ReplicaAuth(key, 'r1', nonces, now);

describe('ReplicaAuth', () => {
  it('admits a signed head once, as the principal it names, and the body it signed for', async () => {
    const nonces = ledger();
    const auth = receiver(nonces);
    const headers = signRequest(key, request, 'alice', 'r1');
    expect(ReplicaAuth.claims(headers)).toBe(true);
    expect(ReplicaAuth.claims({ authorization: 'Bearer x' })).toBe(false);
    expect(ReplicaAuth.claims({ 'x-codexec-replica-anything': 'x' })).toBe(true);
    const admitted = await auth.admit('POST', '/mcp', headers);
    expect(admitted).toMatchObject({ principal: 'alice', length: body.length });
    expect(nonces.claimed.get(headers[SIGNED.nonce] as string)).toBe(
      Number(headers[SIGNED.time]) + 2 * SIGNED_WINDOW_MS,
    );
    if (!admitted) throw new Error('not admitted');
    expect(ReplicaAuth.matches(admitted, body)).toBe(true);
    expect(ReplicaAuth.matches(admitted, Buffer.from('{"jsonrpc":"2.0","id":2}'))).toBe(false);
    expect(ReplicaAuth.matches(admitted, body.subarray(1))).toBe(false);
    expect(await auth.admit('POST', '/mcp', headers)).toBeUndefined(); // the same head replayed
    // Another replica sharing the ledger refuses it too.
    expect(await new ReplicaAuth(key, 'r1', nonces).admit('POST', '/mcp', headers)).toBeUndefined();
  });

  it('refuses a head for another replica, a changed method, path, principal, length or digest, and another key', async () => {
    const auth = receiver();
    expect(await auth.admit('POST', '/mcp', signRequest(key, request, 'alice', 'r2'))).toBeUndefined();
    expect(await auth.admit('GET', '/mcp', signRequest(key, request, 'alice', 'r1'))).toBeUndefined();
    expect(await auth.admit('POST', '/mcp?x=1', signRequest(key, request, 'alice', 'r1'))).toBeUndefined();
    const changes = {
      [SIGNED.principal]: 'bob',
      [SIGNED.length]: String(body.length + 1),
      [SIGNED.digest]: 'a'.repeat(64),
      [SIGNED.target]: 'r1x',
    };
    for (const [name, value] of Object.entries(changes)) {
      const headers = { ...signRequest(key, request, 'alice', 'r1'), [name]: value };
      expect(await auth.admit('POST', '/mcp', headers)).toBeUndefined();
    }
    const forged = signRequest(randomBytes(32), request, 'alice', 'r1');
    expect(await auth.admit('POST', '/mcp', forged)).toBeUndefined();
  });

  it('refuses a time outside the window on either side, and malformed headers, without claiming their nonce', async () => {
    let now = 1_000_000_000_000;
    const nonces = ledger();
    const auth = receiver(nonces, () => now);
    const old = signRequest(key, request, 'alice', 'r1', now);
    now += SIGNED_WINDOW_MS + 1;
    expect(await auth.admit('POST', '/mcp', old)).toBeUndefined();
    const ahead = signRequest(key, request, 'alice', 'r1', now + SIGNED_WINDOW_MS + 1);
    expect(await auth.admit('POST', '/mcp', ahead)).toBeUndefined();
    expect(nonces.claimed.size).toBe(0);
    const within = signRequest(key, request, 'alice', 'r1', now - SIGNED_WINDOW_MS + 1000);
    expect(await auth.admit('POST', '/mcp', within)).toBeDefined();
    const good = signRequest(key, request, 'alice', 'r1', now);
    for (const name of Object.values(SIGNED)) {
      const { [name]: _dropped, ...missing } = good;
      expect(await auth.admit('POST', '/mcp', missing)).toBeUndefined();
    }
    const malformed = [
      { [SIGNED.signature]: 'zz' },
      { [SIGNED.principal]: 'al\nice' },
      { [SIGNED.length]: '-1' },
      { [SIGNED.time]: [good[SIGNED.time] ?? ''] },
    ];
    for (const change of malformed)
      expect(await auth.admit('POST', '/mcp', { ...good, ...change })).toBeUndefined();
    expect(nonces.claimed.size).toBe(1); // only `within`'s
    expect(await auth.admit('POST', '/mcp', good)).toMatchObject({ principal: 'alice' });
  });
});
