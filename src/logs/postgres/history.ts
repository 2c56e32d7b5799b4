import { readdirSync } from 'node:fs';
import type { Postgres } from '../../store/index.js';
import { log } from '../../util/index.js';
import { type FullEntry, toFullEntry } from '../entry.js';
import { ExecutionNotFoundError } from '../errors.js';
import { parseLogFileName } from '../files.js';
import type { SearchFilters, SearchPage } from '../filters.js';
import { parseLine } from '../lines.js';
import {
  applyRetention,
  type Cutoffs,
  cutoffs,
  type ExpiredExecution,
  type RetentionDays,
  type RetentionIndex,
  type RetentionReport,
} from '../retention.js';
import { RetentionSchedule } from '../schedule.js';
import type { History } from '../store.js';
import { LogWriter } from '../writer.js';
import { insertBatch, toBatch } from './rows.js';
import { LOG_COMPONENT, LOG_MIGRATIONS } from './schema.js';
import { pgSearch } from './search.js';

/** How long appends are batched before they go to PostgreSQL (as index.db's indexing). */
const INDEX_DELAY_MS = 200;
/** Lines per INSERT: a burst is sent in statements of bounded size. */
const BATCH_LINES = 1000;
/** A batch the database refused this many times is dropped (logged; the JSONL keeps it). */
const ATTEMPTS = 3;

export interface PgExecutionLogsOptions {
  readonly logDir: string;
  readonly store: Postgres;
  /** This replica's id (replicaId()), kept with each row it writes. */
  readonly replica: string;
  readonly retentionDays: RetentionDays;
  readonly onExpired?: (expired: readonly ExpiredExecution[]) => Promise<void>;
}

/**
 * Execution history over PostgreSQL (CODEXEC_STORE=postgres://…): the JSONL files stay this
 * replica's own record, written exactly as without a store; every line this replica appends is
 * also put into the shared tables, batched, so that search, get_execution_log and principalOf on
 * any replica see every replica's executions. A search first sends what is pending
 * (read-your-writes). Lines written while the database was unreachable are retried with the
 * next batch; after ATTEMPTS failures they are only in the JSONL.
 */
export class PgExecutionLogs implements History {
  readonly writer: LogWriter;
  private pending: string[] = [];
  private failures = 0;
  private sending: Promise<void> = Promise.resolve();
  private sendTask: NodeJS.Timeout | undefined;
  private readonly retention = new RetentionSchedule(() => this.runRetention());
  private closed = false;

  constructor(private readonly options: PgExecutionLogsOptions) {
    this.writer = new LogWriter(options.logDir, { onAppend: (_file, line) => this.noteAppended(line) });
  }

  async search(filters: SearchFilters, principal?: string): Promise<SearchPage> {
    await this.caughtUp();
    return pgSearch(this.options.store, filters, principal);
  }

  async get(executionId: string, principal?: string): Promise<FullEntry> {
    await this.caughtUp();
    const [row] = await this.options.store.query<{
      line: string;
      language: string | null;
      principal: string;
    }>('SELECT line, language, principal FROM codexec_log_executions WHERE execution_id = $1', [executionId]);
    const parsed = row && parseLine(row.line);
    if (!row || parsed?.kind !== 'execution' || (principal !== undefined && row.principal !== principal)) {
      throw new ExecutionNotFoundError(executionId);
    }
    return toFullEntry(parsed.line, row.language);
  }

  async principalOf(executionId: string): Promise<string | undefined> {
    await this.caughtUp();
    const [row] = await this.options.store.query<{ principal: string }>(
      'SELECT principal FROM codexec_log_executions WHERE execution_id = $1',
      [executionId],
    );
    return row?.principal;
  }

  /**
   * This replica's JSONL files as without a store; in PostgreSQL, every replica's expired rows
   * (the same cutoffs: any replica's pass removes them). Saved output is local: `onExpired` hears
   * of the expired entries of this replica's files.
   */
  async runRetention(now = Date.now()): Promise<RetentionReport> {
    await this.caughtUp();
    const cut = cutoffs(this.options.retentionDays, now);
    const report = await applyRetention(
      this.options.logDir,
      this.writer,
      new LocalFiles(this.options.logDir),
      cut,
      () => this.closed,
    );
    if (report.expired.length > 0) await this.options.onExpired?.(report.expired);
    const [deleted] = await this.options.store.query<{ n: number }>(
      `WITH gone AS (DELETE FROM codexec_log_executions WHERE
         (session_id IS NOT NULL AND executed_ms < $1) OR
         (session_id IS NULL AND status = 'success' AND executed_ms < $2) OR
         (session_id IS NULL AND status <> 'success' AND executed_ms < $3)
         RETURNING principal, coalesce(language, '') AS language, status),
       counted AS (SELECT principal, language, status, count(*) AS n FROM gone GROUP BY 1, 2, 3),
       fixed AS (UPDATE codexec_log_counts c SET n = c.n - counted.n FROM counted
         WHERE (c.principal, c.language, c.status) = (counted.principal, counted.language, counted.status))
       SELECT coalesce(sum(n), 0)::int AS n FROM counted`,
      [cut.session, cut.success, cut.failure],
    );
    const rows = deleted?.n ?? 0;
    if (report.removedEntries > 0 || report.deletedFiles.length > 0 || rows > 0) {
      log(
        'info',
        `retention removed ${report.removedEntries} expired entries ` +
          `(${report.deletedFiles.length} files deleted, ${report.rewrittenFiles.length} rewritten) ` +
          `and ${rows} rows from the shared log`,
      );
    }
    return report;
  }

  startRetention(): void {
    if (!this.closed) this.retention.start();
  }

  /** Finish pending appends and send them; the store itself is closed by its owner. */
  async close(): Promise<void> {
    if (this.closed) return;
    await this.writer.flush();
    this.closed = true;
    clearTimeout(this.sendTask);
    await this.retention.stop();
    try {
      await this.send();
    } catch (error) {
      log('warn', `could not send execution logs to postgres: ${(error as Error).message}`);
    }
  }

  /** The tables exist, and every line appended so far is in them. */
  private async caughtUp(): Promise<void> {
    await this.writer.flush();
    await this.send();
  }

  private noteAppended(line: string): void {
    this.pending.push(line);
    if (this.closed) return;
    this.sendTask ??= setTimeout(() => {
      this.sendTask = undefined;
      this.send().catch((error: Error) =>
        log('warn', `could not send execution logs to postgres: ${error.message}`),
      );
    }, INDEX_DELAY_MS);
    this.sendTask.unref();
  }

  /** Send what is pending, one send at a time. */
  private send(): Promise<void> {
    const run = this.sending.then(() => this.sendPending());
    this.sending = run.catch(() => {});
    return run;
  }

  private async sendPending(): Promise<void> {
    const { store } = this.options;
    await store.migrate(LOG_COMPONENT, LOG_MIGRATIONS);
    while (this.pending.length > 0) {
      const lines = this.pending.slice(0, BATCH_LINES);
      const batch = toBatch(lines, this.options.replica);
      try {
        await store.transaction((tx) => insertBatch(tx, batch));
        this.failures = 0;
      } catch (error) {
        if (++this.failures < ATTEMPTS) throw error;
        this.failures = 0;
        log(
          'error',
          `postgres refused execution log entries ${batch.ids.join(', ')} ${ATTEMPTS} times ` +
            `(${(error as Error).message}); they stay in the JSONL only`,
        );
      }
      this.pending = this.pending.slice(lines.length);
    }
  }
}

/**
 * Retention's view of this replica's files without index.db: a daily file can hold expired
 * entries only when its day began before the latest cutoff (its entries are of that day).
 */
class LocalFiles implements RetentionIndex {
  constructor(private readonly dir: string) {}

  countExpired(file: string, cut: Cutoffs): number {
    const day = parseLogFileName(file)?.dayMs;
    return day !== undefined && day < Math.max(cut.success, cut.failure, cut.session) ? 1 : 0;
  }

  syncFile(): void {}

  listLogFiles(): string[] {
    let names: string[];
    try {
      names = readdirSync(this.dir);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
      throw error;
    }
    return names.filter((name) => parseLogFileName(name) !== undefined).sort();
  }
}
