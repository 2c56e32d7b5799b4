import type { Postgres, Queryable } from '../../store/index.js';
import type { ChainReport, ChainsReport } from './report.js';
import { CHAIN_COLUMNS, type ChainRow, chainRows, headSigned, startSigned } from './schema.js';
import { type Break, ChainWalk } from './walk.js';

/**
 * `audit verify` on the postgres store: every chain, each from its start (seq 1 and the genesis
 * hash, or where retention's signed start says) through its signed head: seq contiguous, each
 * entry's hash, HMAC and link, and the last entry the head's. All in one snapshot (REPEATABLE
 * READ), so appends and retention running meanwhile are seen all or not at all.
 */
export async function verifyChains(pg: Postgres, key: Buffer): Promise<ChainsReport> {
  return await pg.transaction(async (tx) => {
    await tx.query('SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY');
    const [tables] = await tx.query<{ present: boolean }>(
      "SELECT to_regclass('codexec_audit_chains') IS NOT NULL AS present",
    );
    const chains: ChainReport[] = [];
    if (tables?.present) {
      const rows = await tx.query<ChainRow>(`SELECT ${CHAIN_COLUMNS} FROM codexec_audit_chains`);
      // Entries whose chain has no row: the chain's start and head were removed with it.
      const orphans = await tx.query<{ chain_id: string }>(
        `SELECT DISTINCT chain_id FROM codexec_audit_entries e
         WHERE NOT EXISTS (SELECT 1 FROM codexec_audit_chains c WHERE c.chain_id = e.chain_id)`,
      );
      for (const row of rows) chains.push(await verifyChain(tx, key, row));
      for (const { chain_id } of orphans)
        chains.push({
          chain_id,
          ok: false,
          entries: 0,
          start_seq: 0,
          last_seq: 0,
          last_hash: '',
          bad: { seq: 0, reason: 'no row in codexec_audit_chains: its signed start and head were removed' },
        });
    }
    chains.sort((a, b) => (a.chain_id < b.chain_id ? -1 : a.chain_id > b.chain_id ? 1 : 0));
    const first = chains.find((chain) => chain.bad);
    return {
      ok: first === undefined,
      store: 'postgres',
      chains,
      entries: chains.reduce((sum, chain) => sum + chain.entries, 0),
      ...(first?.bad && { bad: { chain: first.chain_id, ...first.bad } }),
    };
  });
}

async function verifyChain(tx: Queryable, key: Buffer, chain: ChainRow): Promise<ChainReport> {
  const startSeq = Number(chain.start_seq);
  const lastSeq = Number(chain.last_seq);
  const walk = new ChainWalk(key, startSeq, chain.start_hash);
  const report = (bad?: Break): ChainReport => ({
    chain_id: chain.chain_id,
    ok: bad === undefined,
    entries: walk.entries,
    start_seq: startSeq,
    last_seq: lastSeq,
    last_hash: walk.lastHash,
    ...(bad && { bad }),
  });
  if (!startSigned(key, chain))
    return report({
      seq: 0,
      reason: "the chain's start fails its HMAC: edited without the key, or signed with another approval key",
    });
  for await (const row of chainRows(tx, chain.chain_id)) {
    const broken = walk.next(row);
    if (broken) return report(broken);
  }
  // After the walk: an entry forged with the head moved to it is named by its seq, not as the head.
  if (!headSigned(key, chain))
    return report({ seq: 0, reason: "the chain's head fails its HMAC: edited without the key" });
  if (walk.lastSeq < lastSeq)
    return report({
      seq: walk.lastSeq + 1,
      reason: `missing: the chain's head records entries through seq ${lastSeq}; the last were deleted`,
    });
  if (walk.lastSeq > lastSeq)
    return report({
      seq: lastSeq + 1,
      reason: `past the chain's head (seq ${lastSeq}): added without the key`,
    });
  if (walk.lastHash !== chain.last_hash)
    return report({
      seq: lastSeq,
      reason: "not the entry the chain's head records as its last (another entry's hash)",
    });
  return report();
}
