import { randomUUID } from 'node:crypto';
import type { Quota, QuotaTable } from '../config/index.js';
import { DEAD_AFTER_MS, migrateReplicas, NOW_MS, type Postgres, replicaId } from '../store/index.js';
import { log } from '../util/index.js';
import { utcDay } from './ledger.js';
import { assertRunRoom, assertSessionRoom, MINUTE_MS, quotaOf, type RunUsage } from './limits.js';
import type { RunHold, RunQuotas } from './store.js';

/** Never edit one that shipped: append. */
const MIGRATIONS = [
  `CREATE TABLE codexec_quota_minutes (
     principal TEXT NOT NULL, minute BIGINT NOT NULL, runs INTEGER NOT NULL, PRIMARY KEY (principal, minute));
   CREATE TABLE codexec_quota_cpu (
     principal TEXT NOT NULL, day TEXT NOT NULL, usec BIGINT NOT NULL, PRIMARY KEY (principal, day));
   CREATE TABLE codexec_quota_runs (
     hold_id TEXT PRIMARY KEY, principal TEXT NOT NULL, replica_id TEXT NOT NULL, started_ms BIGINT NOT NULL);
   CREATE INDEX codexec_quota_runs_principal ON codexec_quota_runs (principal);`,
];

/**
 * A principal's counts in one statement. Its running runs are its holds on live replicas (this
 * one, $2, or one heard from within $6 ms), less the holds this replica has ended but not yet
 * removed ($5); $3 the UTC minute, $4 the UTC day.
 */
const USAGE = `SELECT
  (SELECT count(*) FROM codexec_quota_runs h WHERE h.principal = $1 AND NOT (h.hold_id = ANY($5::text[]))
     AND (h.replica_id = $2 OR EXISTS (SELECT 1 FROM codexec_replicas r
       WHERE r.replica_id = h.replica_id AND r.heartbeat_ms > ${NOW_MS} - $6)))::int AS running,
  (SELECT runs FROM codexec_quota_minutes WHERE principal = $1 AND minute = $3) AS admitted,
  (SELECT usec FROM codexec_quota_cpu WHERE principal = $1 AND day = $4) AS cpu_usec`;

/**
 * CODEXEC_QUOTAS counted in the shared database (CODEXEC_STORE=postgres://…), across replicas:
 * runs per UTC minute and CPU seconds per UTC day as counters per principal, concurrent runs as
 * holds named by replica (a dead replica's holds no longer count, and are removed by the next
 * admission of their principal). Admission is one transaction under a lock per principal; a run's
 * end is written in the background (this replica discounts it at once). max_sessions stays per
 * replica: sessions live in one replica's processes.
 */
export class SharedQuotas implements RunQuotas {
  /** Holds ended here whose removal has not been confirmed yet (not counted meanwhile). */
  private readonly ending = new Set<string>();
  /** CPU µs charged here not yet confirmed written, per principal (counted meanwhile). */
  private readonly charging = new Map<string, number>();

  constructor(
    private readonly table: QuotaTable,
    private readonly pg: Postgres,
    /** This replica (tests make two in one process). */
    private readonly self: string = replicaId(),
    private readonly now: () => number = Date.now,
  ) {}

  of(principal: string): Quota {
    return quotaOf(this.table, principal);
  }

  async check(principal: string): Promise<void> {
    const quota = this.of(principal);
    if (!limitsRuns(quota)) return;
    await this.ready();
    const now = this.now();
    assertRunRoom(quota, await this.usage(this.pg, principal, now), now);
  }

  async admit(principal: string): Promise<RunHold> {
    const quota = this.of(principal);
    if (!limitsRuns(quota)) return { end: () => {} }; // nothing to count: no round trip
    const holdId = await this.enter(principal, quota);
    const charged = quota.cpu_seconds_per_day !== undefined;
    let ended = false;
    return {
      end: (cpuUsec) => {
        if (ended) return;
        ended = true;
        this.leave(principal, holdId, charged ? Math.round(cpuUsec) : 0);
      },
    };
  }

  assertSessionRoom(principal: string, open: number): void {
    assertSessionRoom(this.of(principal), open);
  }

  /** Count the run in (minute, and a hold when concurrency is limited), or refuse it: atomically. */
  private async enter(principal: string, quota: Quota): Promise<string | undefined> {
    await this.ready();
    const now = this.now();
    const minute = Math.floor(now / MINUTE_MS);
    const holdId = quota.max_concurrent_runs === undefined ? undefined : randomUUID();
    await this.pg.transaction(async (tx) => {
      await tx.query("SELECT pg_advisory_xact_lock(hashtext('codexec quota ' || $1))", [principal]);
      assertRunRoom(quota, await this.usage(tx, principal, now), now);
      await tx.query(
        `INSERT INTO codexec_quota_minutes AS m (principal, minute, runs) VALUES ($1, $2, 1)
         ON CONFLICT (principal, minute) DO UPDATE SET runs = m.runs + 1`,
        [principal, minute],
      );
      // Yesterday's counters, past minutes and holds of replicas gone: nobody asks for them again.
      await tx.query(
        `WITH m AS (DELETE FROM codexec_quota_minutes WHERE principal = $1 AND minute < $2),
              c AS (DELETE FROM codexec_quota_cpu WHERE principal = $1 AND day < $3)
         DELETE FROM codexec_quota_runs h WHERE h.principal = $1 AND h.replica_id <> $4
           AND NOT EXISTS (SELECT 1 FROM codexec_replicas r
             WHERE r.replica_id = h.replica_id AND r.heartbeat_ms > ${NOW_MS} - $5)`,
        [principal, minute, utcDay(now), this.self, DEAD_AFTER_MS],
      );
      if (holdId)
        await tx.query(
          'INSERT INTO codexec_quota_runs (hold_id, principal, replica_id, started_ms) VALUES ($1, $2, $3, $4)',
          [holdId, principal, this.self, now],
        );
    });
    return holdId;
  }

  /** The run is over: its hold goes and its CPU is charged, in the background. */
  private leave(principal: string, holdId: string | undefined, usec: number): void {
    if (!holdId && usec <= 0) return;
    if (holdId) this.ending.add(holdId);
    if (usec > 0) this.charging.set(principal, (this.charging.get(principal) ?? 0) + usec);
    const write = async () => {
      if (holdId) await this.pg.query('DELETE FROM codexec_quota_runs WHERE hold_id = $1', [holdId]);
      if (usec > 0)
        await this.pg.query(
          `INSERT INTO codexec_quota_cpu AS c (principal, day, usec) VALUES ($1, $2, $3)
           ON CONFLICT (principal, day) DO UPDATE SET usec = c.usec + EXCLUDED.usec`,
          [principal, utcDay(this.now()), usec],
        );
    };
    write().then(
      () => {
        if (holdId) this.ending.delete(holdId);
        this.settleCharge(principal, usec);
      },
      // The hold stays discounted here (other replicas count it until this one is gone).
      (error: Error) => {
        this.settleCharge(principal, usec);
        log('warn', `CODEXEC_QUOTAS: cannot record a run's end: ${error.message}`);
      },
    );
  }

  private settleCharge(principal: string, usec: number): void {
    if (usec <= 0) return;
    const left = (this.charging.get(principal) ?? usec) - usec;
    if (left > 0) this.charging.set(principal, left);
    else this.charging.delete(principal);
  }

  private async usage(on: Pick<Postgres, 'query'>, principal: string, now: number): Promise<RunUsage> {
    const [row] = await on.query<{ running: number; admitted: number | null; cpu_usec: string | null }>(
      USAGE,
      [principal, this.self, Math.floor(now / MINUTE_MS), utcDay(now), [...this.ending], DEAD_AFTER_MS],
    );
    const pending = this.charging.get(principal) ?? 0;
    return {
      running: row?.running ?? 0,
      admitted: row?.admitted ?? 0,
      cpuUsec: () => Number(row?.cpu_usec ?? 0) + pending,
    };
  }

  private async ready(): Promise<void> {
    await migrateReplicas(this.pg);
    await this.pg.migrate('quotas', MIGRATIONS);
  }
}

/** Whether `quota` limits runs at all (else a run is neither counted nor checked). */
function limitsRuns(quota: Quota): boolean {
  return (
    quota.max_concurrent_runs !== undefined ||
    quota.runs_per_minute !== undefined ||
    quota.cpu_seconds_per_day !== undefined
  );
}
