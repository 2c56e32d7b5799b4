// openRecords: CODEXEC_STORE's kind picks every record's store, sqlite's or postgres's, together.
// Nothing is opened by choosing: no file is written, no connection made.
import { readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { AuditTrail } from '../../src/audit/index.js';
import { PgAuditTrail } from '../../src/audit/postgres/index.js';
import { DiskScriptStore } from '../../src/library/index.js';
import { PostgresScriptStore } from '../../src/library/postgres.js';
import { ExecutionLogs } from '../../src/logs/index.js';
import { PgExecutionLogs } from '../../src/logs/postgres/index.js';
import { Quotas } from '../../src/quotas/index.js';
import { SharedQuotas } from '../../src/quotas/postgres.js';
import { openRecords } from '../../src/records/index.js';
import { Postgres } from '../../src/store/index.js';
import { SqliteTaskStore } from '../../src/tasks/index.js';
import { PgTaskStore } from '../../src/tasks/postgres.js';
import { tempDir } from '../helpers/server.js';

const home = tempDir();
afterAll(() => rmSync(home, { recursive: true, force: true }));

const config = {
  home,
  logDir: join(home, 'logs'),
  scriptsDir: join(home, 'scripts'),
  retentionDays: { success: 30, failure: 30, session: 30 },
  auditRetentionDays: 30,
  scriptLimits: { maxVersions: 10, maxScriptBytes: 1000 },
  quotas: { file: join(home, 'quotas.json'), table: { '*': { max_sessions: 2 } } },
};
const options = { approvalKey: new Uint8Array(32), onExpired: async () => {} };

describe('openRecords', () => {
  it('keeps every record on this machine for sqlite', async () => {
    const records = await openRecords({ ...config, store: { kind: 'sqlite' } }, options);
    expect(records.store).toBeUndefined();
    expect(records.history).toBeInstanceOf(ExecutionLogs);
    expect(records.audit).toBeInstanceOf(AuditTrail);
    expect(records.tasks).toBeInstanceOf(SqliteTaskStore);
    expect(records.scripts.of('alice')).toBeInstanceOf(DiskScriptStore);
    expect(records.quotas).toBeInstanceOf(Quotas);
    expect(readdirSync(home)).toEqual([]);
  });

  it('keeps every record in one shared database for postgres', async () => {
    // Port 9 (discard): nothing answers there, and nothing should be asked.
    const records = await openRecords(
      { ...config, store: { kind: 'postgres', url: 'postgres://127.0.0.1:9/x' } },
      options,
    );
    expect(records.store).toBeInstanceOf(Postgres);
    expect(records.history).toBeInstanceOf(PgExecutionLogs);
    expect(records.audit).toBeInstanceOf(PgAuditTrail);
    expect(records.tasks).toBeInstanceOf(PgTaskStore);
    expect(records.scripts.of('alice')).toBeInstanceOf(PostgresScriptStore);
    expect(records.quotas).toBeInstanceOf(SharedQuotas);
    await records.store?.close();
  });

  it('has no quotas when CODEXEC_QUOTAS is unset', async () => {
    const { quotas: _, ...unset } = config;
    expect((await openRecords({ ...unset, store: { kind: 'sqlite' } }, options)).quotas).toBeUndefined();
  });
});
