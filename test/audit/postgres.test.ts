import { createHash, randomBytes } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { chainEntry } from '../../src/audit/chain.js';
import { PgAuditTrail, verifyChains } from '../../src/audit/postgres/index.js';
import type { AuditAttempt } from '../../src/policy/index.js';
import { Postgres } from '../../src/store/index.js';
import { startPostgres, type TestPostgres } from '../helpers/postgres.js';

const DAY_MS = 86_400_000;
let cluster: TestPostgres;
const open: Postgres[] = [];

beforeAll(async () => {
  cluster = await startPostgres();
}, 60_000);
afterAll(() => cluster?.stop());
afterEach(async () => {
  await Promise.all(open.splice(0).map((pg) => pg.close()));
});

const attempt = (n: number, principal = 'alice'): AuditAttempt => ({
  tool: 'execute_code',
  execution_id: `exec_${n.toString(16).padStart(12, '0')}`,
  session_id: null,
  runtime: 'python',
  input_code: `print(${n})`,
  output_summary: `${n}\n`,
  exit_code: 0,
  duration_ms: 12,
  approved: true,
  approved_by: 'auto',
  rule: null,
  principal,
  tool_calls: null,
});

const KEY = randomBytes(32);
let databases = 0;

async function database() {
  const url = await cluster.createDatabase(`audit${++databases}`);
  const pg = new Postgres(url);
  open.push(pg);
  return { url, pg };
}

function trail(
  pg: Postgres,
  chainId: string,
  options: { key?: Buffer; now?: () => Date; days?: number } = {},
) {
  return new PgAuditTrail({
    pg,
    key: options.key ?? KEY,
    chainId,
    retentionDays: options.days ?? 365,
    ...(options.now && { now: options.now }),
  });
}

/** Two chains of `n` entries each, written at once by two trails on their own pools. */
async function twoChains(n = 5) {
  const db = await database();
  const writers = ['replica-a', 'replica-b'].map((id) => {
    const pg = new Postgres(db.url);
    open.push(pg);
    return trail(pg, id);
  });
  await Promise.all(
    writers.flatMap((writer, w) =>
      Array.from({ length: n }, (_, i) => writer.record(attempt(w * 100 + i, w ? 'bob' : 'alice'))),
    ),
  );
  await Promise.all(writers.map((writer) => writer.close()));
  return db;
}

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

describe('the audit trail on PostgreSQL', () => {
  it('keeps one intact chain per replica when two append at once', async () => {
    const { pg } = await twoChains(20);
    const report = await verifyChains(pg, KEY);
    expect(report.ok).toBe(true);
    expect(report.entries).toBe(40);
    expect(report.chains.map((c) => [c.chain_id, c.entries, c.start_seq, c.last_seq])).toEqual([
      ['replica-a', 20, 1, 20],
      ['replica-b', 20, 1, 20],
    ]);
    // The same entry as a file's line: fields in order, ending with prev_hash, hashed as written.
    const [row] = await pg.query<{ entry: string; hash: string; prev_hash: string }>(
      "SELECT entry, hash, prev_hash FROM codexec_audit_entries WHERE chain_id = 'replica-a' AND seq = 2",
    );
    const entry = JSON.parse(row?.entry ?? '{}');
    expect(Object.keys(entry).at(0)).toBe('type');
    expect(Object.keys(entry).at(-1)).toBe('prev_hash');
    expect(sha256(row?.entry ?? '')).toBe(row?.hash);
    expect(entry.prev_hash).toBe(row?.prev_hash);
    // Verified with another key (another approval key file): every entry's HMAC fails.
    const other = await verifyChains(pg, randomBytes(32));
    expect(other.bad).toMatchObject({ chain: 'replica-a', seq: 0 });
  });

  it('shows the newest entries, a principal its own', async () => {
    const { pg } = await twoChains(3);
    const view = trail(pg, 'viewer');
    expect((await view.recent(undefined, 100)).length).toBe(6);
    const bobs = await view.recent('bob', 100);
    expect(bobs.map((row) => row.principal)).toEqual(['bob', 'bob', 'bob']);
    expect(bobs[0]?.input_code).toBe('print(102)');
  });

  const tampering: Array<[string, string, number, RegExp]> = [
    [
      'a field changed',
      "UPDATE codexec_audit_entries SET entry = replace(entry, 'print(3)', 'print(4)') WHERE chain_id = 'replica-a' AND seq = 4",
      4,
      /hash does not match/,
    ],
    [
      'a row deleted in the middle',
      "DELETE FROM codexec_audit_entries WHERE chain_id = 'replica-b' AND seq = 3",
      3,
      /missing.*deleted/,
    ],
    [
      'two rows swapped (seq reordered)',
      `UPDATE codexec_audit_entries SET seq = 1000 WHERE chain_id = 'replica-a' AND seq = 2;
       UPDATE codexec_audit_entries SET seq = 2 WHERE chain_id = 'replica-a' AND seq = 3;
       UPDATE codexec_audit_entries SET seq = 3 WHERE chain_id = 'replica-a' AND seq = 1000`,
      2,
      /prev_hash does not match/,
    ],
    [
      'the newest rows deleted',
      "DELETE FROM codexec_audit_entries WHERE chain_id = 'replica-b' AND seq >= 4",
      4,
      /head records entries through seq 5/,
    ],
    [
      'the chain cut and its head moved back',
      `DELETE FROM codexec_audit_entries WHERE chain_id = 'replica-a' AND seq = 5;
       UPDATE codexec_audit_chains c SET last_seq = 4, last_hash = e.hash FROM codexec_audit_entries e
       WHERE c.chain_id = 'replica-a' AND e.chain_id = 'replica-a' AND e.seq = 4`,
      0,
      /head fails its HMAC/,
    ],
    [
      'the at column moved (retention would take the entry)',
      "UPDATE codexec_audit_entries SET at = at - interval '400 days' WHERE chain_id = 'replica-b' AND seq = 5",
      5,
      /at column differs/,
    ],
    [
      "the chain's row removed",
      "DELETE FROM codexec_audit_chains WHERE chain_id = 'replica-a'",
      0,
      /no row in codexec_audit_chains/,
    ],
  ];

  for (const [what, sql, seq, reason] of tampering) {
    it(`catches ${what}, naming the chain and seq`, async () => {
      const { pg } = await twoChains();
      await pg.query(sql);
      const report = await verifyChains(pg, KEY);
      const chain = /replica-[ab]/.exec(sql)?.[0];
      expect(report.ok).toBe(false);
      expect(report.bad).toMatchObject({ chain, seq });
      expect(report.bad?.reason).toMatch(reason);
      // The other chain still verifies on its own.
      expect(report.chains.filter((c) => c.ok).map((c) => c.chain_id)).toEqual(
        ['replica-a', 'replica-b'].filter((id) => id !== chain),
      );
    });
  }

  it('catches an entry changed with its sha256 recomputed, and one forged without the key', async () => {
    const { pg } = await twoChains();
    const [row] = await pg.query<{ entry: string }>(
      "SELECT entry FROM codexec_audit_entries WHERE chain_id = 'replica-a' AND seq = 3",
    );
    const changed = (row?.entry ?? '').replace('print(2)', 'print(9)');
    await pg.query(
      "UPDATE codexec_audit_entries SET entry = $1, hash = $2 WHERE chain_id = 'replica-a' AND seq = 3",
      [changed, sha256(changed)],
    );
    expect((await verifyChains(pg, KEY)).bad).toMatchObject({
      chain: 'replica-a',
      seq: 3,
      reason: /hmac does not match/,
    });

    // A whole entry forged after the other chain's last, linked right but signed with a guessed
    // key, and the chain's head moved to it (its HMAC cannot be redone without the key).
    const [last] = await pg.query<{ hash: string }>(
      "SELECT hash FROM codexec_audit_entries WHERE chain_id = 'replica-b' AND seq = 5",
    );
    const at = new Date();
    const forged = chainEntry(attempt(999, 'bob'), last?.hash ?? '', at, randomBytes(32));
    await pg.query(
      `INSERT INTO codexec_audit_entries (chain_id, seq, at, principal, prev_hash, hash, hmac, entry)
       VALUES ('replica-b', 6, $1, 'bob', $2, $3, $4, $5)`,
      [at, last?.hash, forged.hash, forged.hmac, forged.unhashed],
    );
    await pg.query(
      "UPDATE codexec_audit_chains SET last_seq = 6, last_hash = $1 WHERE chain_id = 'replica-b'",
      [forged.hash],
    );
    const report = await verifyChains(pg, KEY);
    expect(report.chains.find((c) => c.chain_id === 'replica-b')?.bad).toMatchObject({
      seq: 6,
      reason: /hmac does not match/,
    });
    // Its head left as it was: the forged row is past it.
    await pg.query(
      "UPDATE codexec_audit_chains SET last_seq = 5, last_hash = $1 WHERE chain_id = 'replica-b'",
      [last?.hash],
    );
    await pg.query(
      "UPDATE codexec_audit_entries SET hmac = (SELECT hmac FROM codexec_audit_entries WHERE chain_id = 'replica-b' AND seq = 5) WHERE chain_id = 'replica-b' AND seq = 6",
    );
    expect((await verifyChains(pg, KEY)).chains.find((c) => c.chain_id === 'replica-b')?.bad).toMatchObject({
      seq: 6,
    });
  });

  it('does not sign over an edited head, nor write a chain another writer moved', async () => {
    const { pg } = await twoChains(2);
    // A restarted writer of replica-a (same chain id) finds its head edited: it refuses to append.
    await pg.query("UPDATE codexec_audit_chains SET last_seq = 1 WHERE chain_id = 'replica-a'");
    const again = trail(pg, 'replica-a');
    await expect(again.record(attempt(50))).rejects.toThrow(/replica-a's head fails its HMAC.*not appending/);
    // Two writers on one chain: the second append of the one whose head moved is refused, not forked.
    const first = trail(pg, 'replica-c');
    const second = trail(pg, 'replica-c');
    await first.record(attempt(60));
    await second.record(attempt(61)); // reads the head at its first append: seq 2
    await expect(first.record(attempt(62))).rejects.toThrow(/head moved under this writer/);
    const report = await verifyChains(pg, KEY);
    expect(report.chains.find((c) => c.chain_id === 'replica-c')).toMatchObject({ ok: true, entries: 2 });
  });

  it('removes whole days past retention from every chain, and the rest still verifies', async () => {
    const { pg } = await database();
    let t = Date.parse('2026-11-01T10:00:00Z');
    const now = () => new Date(t);
    // The writers keep a year; a third replica, keeping 3 days, removes from every chain.
    const a = trail(pg, 'replica-a', { now });
    const b = trail(pg, 'replica-b', { now });
    const pruner = trail(pg, 'replica-c', { now, days: 3 });
    for (let day = 0; day < 6; day++, t += DAY_MS - 3000)
      for (let n = 0; n < 3; n++, t += 1000) {
        await a.record(attempt(day * 10 + n));
        await b.record(attempt(day * 10 + n, 'bob'));
      }
    await Promise.all([a.close(), b.close()]);
    // It is 2026-11-07: the days through 2026-11-03 are past 3 days (as the file trail counts).
    expect(await pruner.prune()).toBe(18);
    const report = await verifyChains(pg, KEY);
    expect(report.ok).toBe(true);
    expect(report.chains.map((c) => [c.chain_id, c.start_seq, c.last_seq, c.entries])).toEqual([
      ['replica-a', 10, 18, 9],
      ['replica-b', 10, 18, 9],
    ]);
    // Appending goes on after the removal, and a second pass removes nothing.
    await a.record(attempt(77));
    await a.close();
    expect(await pruner.prune()).toBe(0);
    expect((await verifyChains(pg, KEY)).ok).toBe(true);
    // A day past retention that fails verification stays: it is evidence.
    t += 2 * DAY_MS;
    await pg.query(
      "UPDATE codexec_audit_entries SET entry = replace(entry, 'print(30)', 'print(31)') WHERE chain_id = 'replica-b' AND seq = 10",
    );
    expect(await pruner.prune()).toBe(6); // replica-a's next two days went; replica-b's stay
    const after = await verifyChains(pg, KEY);
    expect(after.chains.map((c) => [c.chain_id, c.start_seq])).toEqual([
      ['replica-a', 16],
      ['replica-b', 10],
    ]);
    expect(after.bad).toMatchObject({ chain: 'replica-b', seq: 10 });
  });

  it('verifies an empty database (no audit tables yet)', async () => {
    const { pg } = await database();
    expect(await verifyChains(pg, KEY)).toEqual({ ok: true, store: 'postgres', chains: [], entries: 0 });
  });
});
