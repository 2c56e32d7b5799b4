// The records of CODEXEC_STORE=postgres://…, loaded by openRecords only when that store is chosen.
// Each kind's postgres store is imported from its own file, not its folder's index.ts: esbuild
// bundles by file, and an index that named them would load them into every server (the bin's
// idle stdio server among them: test/server/idle-modules.test.ts).
import { PgAuditTrail } from '../audit/postgres/index.js';
import { ScriptLibrary } from '../library/index.js';
import { PostgresScriptStore } from '../library/postgres.js';
import { PgExecutionLogs } from '../logs/postgres/index.js';
import { SharedQuotas } from '../quotas/postgres.js';
import { deriveKey, Postgres, replicaId } from '../store/index.js';
import { PgTaskStore } from '../tasks/postgres.js';
import type { Records, RecordsConfig, RecordsOptions } from './open.js';

/** Every replica's records in one database; each replica's JSONL logs stay its own files too. */
export function postgresRecords(config: RecordsConfig, url: string, options: RecordsOptions): Records {
  const { scriptLimits, quotas } = config;
  const store = new Postgres(url);
  return {
    store,
    history: new PgExecutionLogs({
      logDir: config.logDir,
      retentionDays: config.retentionDays,
      onExpired: options.onExpired,
      store,
      replica: replicaId(),
    }),
    audit: new PgAuditTrail({
      pg: store,
      key: deriveKey(options.approvalKey, 'audit'),
      chainId: replicaId(),
      retentionDays: config.auditRetentionDays,
    }),
    tasks: new PgTaskStore(store),
    scripts: new ScriptLibrary((principal) => new PostgresScriptStore(store, principal, scriptLimits)),
    quotas: quotas && new SharedQuotas(quotas.table, store),
  };
}
