import type { Postgres } from '../../store/index.js';
import { log } from '../../util/index.js';
import { CHAIN_COLUMNS, type ChainRow, chainRows, startMac, startSigned } from './schema.js';
import { ChainWalk } from './walk.js';

const DAY_MS = 86_400_000;

/**
 * Remove, from every chain, the entries whose whole UTC day is older than `days` (as the file
 * trail removes day files): a prefix of each chain. The chain's signed start moves past them (the
 * seq and hash of the last one removed) in the same transaction, so the rest still verifies. A
 * prefix that fails verification is kept (it is evidence), and so is a chain whose start fails
 * its HMAC. Returns how many entries went.
 */
export async function pruneChains(pg: Postgres, key: Buffer, days: number, nowMs: number): Promise<number> {
  const cutoff = new Date(Math.floor((nowMs - days * DAY_MS) / DAY_MS) * DAY_MS);
  const chains = await pg.query<{ chain_id: string }>(
    'SELECT DISTINCT chain_id FROM codexec_audit_entries WHERE at < $1',
    [cutoff],
  );
  let removed = 0;
  for (const { chain_id } of chains) {
    removed += await pruneChain(pg, key, chain_id, cutoff).catch((error: Error) => {
      log('warn', `audit retention: chain ${chain_id}: ${error.message}`);
      return 0;
    });
  }
  return removed;
}

async function pruneChain(pg: Postgres, key: Buffer, chainId: string, cutoff: Date): Promise<number> {
  return await pg.transaction(async (tx) => {
    // Locked against the other replicas' retention (they skip it) and the owner's head (it waits).
    const [chain] = await tx.query<ChainRow>(
      `SELECT ${CHAIN_COLUMNS} FROM codexec_audit_chains WHERE chain_id = $1 FOR UPDATE SKIP LOCKED`,
      [chainId],
    );
    if (!chain) return 0;
    if (!startSigned(key, chain)) {
      log('warn', `audit retention: chain ${chainId}'s start fails its HMAC; nothing removed (evidence)`);
      return 0;
    }
    // The prefix: up to the first entry of a day to keep (clocks may step back: not past it).
    const [bound] = await tx.query<{ first_kept: string | null; last: string | null }>(
      `SELECT (SELECT min(seq) FROM codexec_audit_entries WHERE chain_id = $1 AND at >= $2) AS first_kept,
              (SELECT max(seq) FROM codexec_audit_entries WHERE chain_id = $1) AS last`,
      [chainId, cutoff],
    );
    const through = bound?.first_kept != null ? Number(bound.first_kept) - 1 : Number(bound?.last);
    const startSeq = Number(chain.start_seq);
    if (!(through >= startSeq)) return 0;
    const walk = new ChainWalk(key, startSeq, chain.start_hash);
    for await (const row of chainRows(tx, chainId, through)) {
      const broken = walk.next(row);
      if (broken) {
        log(
          'warn',
          `audit retention: chain ${chainId} seq ${broken.seq}: ${broken.reason}; nothing removed (evidence)`,
        );
        return 0;
      }
    }
    if (walk.lastSeq !== through) {
      log(
        'warn',
        `audit retention: chain ${chainId} seq ${walk.lastSeq + 1} is missing; nothing removed (evidence)`,
      );
      return 0;
    }
    await tx.query(
      'UPDATE codexec_audit_chains SET start_seq = $2, start_hash = $3, start_hmac = $4 WHERE chain_id = $1',
      [chainId, through + 1, walk.lastHash, startMac(key, chainId, through + 1, walk.lastHash)],
    );
    await tx.query('DELETE FROM codexec_audit_entries WHERE chain_id = $1 AND seq <= $2', [chainId, through]);
    return walk.entries;
  });
}
