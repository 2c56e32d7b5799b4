import { type ChainsReport, verifyChains } from '../audit/postgres/index.js';
import type { Config } from '../config/index.js';
import { deriveKey, loadApprovalKey, Postgres, redactUrl } from '../store/index.js';

/**
 * `codexec audit verify` on a postgres store: every replica's chain in the shared table, under
 * the audit key derived from CODEXEC_APPROVAL_KEY_FILE. One line per chain; exit 1 naming the
 * chain and seq of each break.
 */
export async function verifyChainsCommand(
  config: Config & { store: { kind: 'postgres' } },
  options: { json?: boolean },
): Promise<void> {
  const key = deriveKey(loadApprovalKey(config.approvalKeyFile), 'audit');
  const pg = new Postgres(config.store.url);
  let report: ChainsReport;
  try {
    report = await verifyChains(pg, key);
  } finally {
    await pg.close();
  }
  process.stdout.write(
    options.json ? `${JSON.stringify(report, null, 2)}\n` : describe(report, config.store.url),
  );
  process.exitCode = report.ok ? 0 : 1;
}

function describe(report: ChainsReport, url: string): string {
  const broken = report.chains.filter((chain) => !chain.ok).length;
  const lines = [
    report.ok
      ? `audit chains intact: ${report.entries} entries in ${report.chains.length} chains on ${redactUrl(url)}`
      : `audit chains broken: ${broken} of ${report.chains.length} chains on ${redactUrl(url)}`,
  ];
  for (const chain of report.chains) {
    const range =
      chain.last_seq >= chain.start_seq ? `seq ${chain.start_seq}..${chain.last_seq}` : 'no entries kept';
    lines.push(
      chain.bad
        ? `  chain ${chain.chain_id}: broken at seq ${chain.bad.seq}: ${chain.bad.reason} (${chain.entries} entries before it verified)`
        : `  chain ${chain.chain_id}: intact, ${chain.entries} entries (${range}), last hash ${chain.last_hash}`,
    );
  }
  return `${lines.join('\n')}\n`;
}
