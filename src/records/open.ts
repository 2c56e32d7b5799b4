import { join } from 'node:path';
import { type AuditLog, AuditTrail, KEY_FILE } from '../audit/index.js';
import type { Config } from '../config/index.js';
import { DiskScriptStore, libraryDir, ScriptLibrary } from '../library/index.js';
import { ExecutionLogs, type ExpiredExecution, type History } from '../logs/index.js';
import { CpuLedger, Quotas, type RunQuotas, USAGE_FILE } from '../quotas/index.js';
import type { Postgres } from '../store/index.js';
import { SqliteTaskStore, type TaskStore } from '../tasks/index.js';

/** Every kind of record, kept in one place for all of them. Nothing is opened until first used. */
export interface Records {
  /** CODEXEC_STORE=postgres://…: the shared database (connects on first use); sqlite: undefined. */
  readonly store: Postgres | undefined;
  /** Execution logs: the JSONL writer and search over index.db or the shared tables. */
  readonly history: History;
  /** The audit trail: daily files, or this replica's chain in the shared table. */
  readonly audit: AuditLog;
  /** MCP tasks: tasks.db, or the shared table. */
  readonly tasks: TaskStore;
  /** Saved scripts, one library per principal: on disk, or in the shared tables. */
  readonly scripts: ScriptLibrary;
  /** CODEXEC_QUOTAS counted in this process, or across replicas (undefined: none configured). */
  readonly quotas: RunQuotas | undefined;
}

export interface RecordsOptions {
  /** The approval key: on postgres the audit key derives from it (every replica verifies every chain). */
  readonly approvalKey: Uint8Array;
  /** What else goes when executions' log entries expire (their saved output). */
  readonly onExpired: (expired: readonly ExpiredExecution[]) => Promise<void>;
}

export type RecordsConfig = Pick<
  Config,
  | 'store'
  | 'home'
  | 'logDir'
  | 'retentionDays'
  | 'auditRetentionDays'
  | 'scriptsDir'
  | 'scriptLimits'
  | 'quotas'
>;

/**
 * The records of CODEXEC_STORE's kind: sqlite (the default, this machine's files) or postgres,
 * whose stores (and the pg driver's glue) are loaded only when chosen: a stdio server on this
 * machine's files never holds them (test/server/idle-modules.test.ts).
 */
export async function openRecords(config: RecordsConfig, options: RecordsOptions): Promise<Records> {
  if (config.store.kind !== 'postgres') return sqliteRecords(config, options);
  const { postgresRecords } = await import('./postgres.js');
  return postgresRecords(config, config.store.url, options);
}

function sqliteRecords(config: RecordsConfig, options: RecordsOptions): Records {
  const { home, logDir, scriptLimits, quotas } = config;
  return {
    store: undefined,
    history: new ExecutionLogs({
      logDir,
      retentionDays: config.retentionDays,
      onExpired: options.onExpired,
      indexPath: join(home, 'index.db'),
    }),
    audit: new AuditTrail({
      dir: logDir,
      keyFile: join(home, KEY_FILE),
      retentionDays: config.auditRetentionDays,
    }),
    tasks: new SqliteTaskStore(join(home, 'tasks.db')),
    scripts: new ScriptLibrary(
      (principal) => new DiskScriptStore(libraryDir(config.scriptsDir, principal), scriptLimits),
    ),
    quotas: quotas && new Quotas(quotas.table, new CpuLedger(join(home, USAGE_FILE), Date.now())),
  };
}
