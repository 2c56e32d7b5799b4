// Requests between replicas (src/server/http/replica-auth.ts): served as the principal they name
// only when the HMAC under the shared key verifies over method, path, principal, time, nonce and
// the body, the time is within 30 s, and the signature was not used before.
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { ReplicaAuth, SIGNED, SIGNED_WINDOW_MS } from '../../../src/server/http/replica-auth.js';

const key = randomBytes(32);
const parts = { method: 'POST', path: '/mcp', body: Buffer.from('{"jsonrpc":"2.0","id":1}') };

describe('ReplicaAuth', () => {
  it('admits a signed request once, as the principal it names', () => {
    const auth = new ReplicaAuth(key);
    const headers = auth.sign(parts, 'alice');
    expect(ReplicaAuth.claims(headers)).toBe(true);
    expect(ReplicaAuth.claims({ authorization: 'Bearer x' })).toBe(false);
    expect(auth.verify(parts, headers)).toBe('alice');
    expect(auth.verify(parts, headers)).toBeUndefined(); // the same request replayed
  });

  it('refuses a changed body, method, path or principal, and another key', () => {
    const auth = new ReplicaAuth(key);
    const changed = [
      { ...parts, body: Buffer.from('{"jsonrpc":"2.0","id":2}') },
      { ...parts, method: 'GET' },
      { ...parts, path: '/mcp?x=1' },
    ];
    for (const other of changed) expect(auth.verify(other, auth.sign(parts, 'alice'))).toBeUndefined();
    expect(auth.verify(parts, { ...auth.sign(parts, 'alice'), [SIGNED.principal]: 'bob' })).toBeUndefined();
    const forger = new ReplicaAuth(randomBytes(32));
    expect(auth.verify(parts, forger.sign(parts, 'alice'))).toBeUndefined();
  });

  it('refuses a time outside the window on either side, and malformed headers', () => {
    let now = 1_000_000_000_000;
    const auth = new ReplicaAuth(key, () => now);
    const old = auth.sign(parts, 'alice');
    now += SIGNED_WINDOW_MS + 1;
    expect(auth.verify(parts, old)).toBeUndefined();
    const ahead = new ReplicaAuth(key, () => now + SIGNED_WINDOW_MS + 1).sign(parts, 'alice');
    expect(auth.verify(parts, ahead)).toBeUndefined();
    const within = new ReplicaAuth(key, () => now - SIGNED_WINDOW_MS + 1000).sign(parts, 'alice');
    expect(auth.verify(parts, within)).toBe('alice');
    const good = auth.sign(parts, 'alice');
    for (const name of Object.values(SIGNED)) {
      const { [name]: _dropped, ...missing } = good;
      expect(auth.verify(parts, missing)).toBeUndefined();
    }
    expect(auth.verify(parts, { ...good, [SIGNED.signature]: 'zz' })).toBeUndefined();
    expect(auth.verify(parts, { ...good, [SIGNED.principal]: 'al\nice' })).toBeUndefined();
    expect(auth.verify(parts, { ...good, [SIGNED.time]: [good[SIGNED.time] ?? ''] })).toBeUndefined();
    expect(auth.verify(parts, good)).toBe('alice');
  });
});
