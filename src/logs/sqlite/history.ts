import { setImmediate as yieldToLoop } from 'node:timers/promises';
import { log } from '../../util/index.js';
import type { FullEntry } from '../entry.js';
import { ExecutionNotFoundError } from '../errors.js';
import type { SearchFilters, SearchPage } from '../filters.js';
import {
  applyRetention,
  cutoffs,
  type ExpiredExecution,
  mayHaveExpired,
  type RetentionDays,
  type RetentionReport,
} from '../retention.js';
import { RetentionSchedule } from '../schedule.js';
import type { History } from '../store.js';
import { LogWriter } from '../writer.js';
import { isCorruption, removeIndexFiles } from './db.js';
import { IndexStore } from './index-store.js';

/** Re-check the directory for lines other writers left unindexed at most this often. */
const RESCAN_MS = 1000;
/** How long appends are batched before they are indexed. */
const INDEX_DELAY_MS = 200;

export interface ExecutionLogsOptions {
  readonly logDir: string;
  /** The derived index (`$CODEXEC_HOME/index.db`). */
  readonly indexPath: string;
  readonly retentionDays: RetentionDays;
  /** What else goes when executions' entries expire (their saved output). */
  readonly onExpired?: (expired: readonly ExpiredExecution[]) => Promise<void>;
}

/**
 * Execution history: the JSONL writer, the SQLite index derived from it, search, retrieval and
 * retention. The index is opened by the first search or retrieval, or a retention pass with
 * something to remove, not by runs: the JSONL line is the record, and an idle server never loads
 * SQLite (~3-8 MB resident). The first search catches the index up with every log file, in chunks
 * that yield to the event loop; from then on appends are indexed in batches as they come. A
 * damaged index is deleted and rebuilt.
 */
export class ExecutionLogs implements History {
  readonly writer: LogWriter;
  private store: IndexStore | undefined;
  private catchUp: Promise<void> | undefined;
  private lastScan = 0;
  private readonly dirty = new Set<string>();
  private dirtyTask: NodeJS.Timeout | undefined;
  private readonly retention = new RetentionSchedule(() => this.runRetention());
  private closed = false;
  private readonly retired: IndexStore[] = [];

  constructor(private readonly options: ExecutionLogsOptions) {
    this.writer = new LogWriter(options.logDir, { onAppend: (file) => this.noteAppended(file) });
  }

  /**
   * Matching executions, newest first, with the count before `limit`: only `principal`'s when
   * given (tools: the caller's), everyone's when not (the operator's CLI).
   */
  async search(filters: SearchFilters, principal?: string): Promise<SearchPage> {
    // Read-your-writes: appends still queued (a session reply does not wait for its log line) land first.
    await this.writer.flush();
    return this.withStore(async (store) => {
      await this.caughtUp(store);
      this.refresh(store, false);
      return store.searcher.search(filters, principal);
    });
  }

  /**
   * The full entry of one execution; throws ExecutionNotFoundError for an unknown id, and for
   * another principal's when `principal` is given (exactly as for an unknown one).
   */
  async get(executionId: string, principal?: string): Promise<FullEntry> {
    await this.writer.flush();
    return this.withStore(async (store) => {
      await this.caughtUp(store);
      this.refresh(store, false);
      let found = store.entries.read(executionId);
      if (!found) {
        // Its file may have been rewritten by another process, or written since the last scan.
        const file = store.entries.fileOf(executionId);
        if (file) store.indexer.syncFile(file);
        this.refresh(store, true);
        found = store.entries.read(executionId);
      }
      if (!found || (principal !== undefined && found.principal !== principal)) {
        throw new ExecutionNotFoundError(executionId);
      }
      return found.entry;
    });
  }

  /** Who ran `executionId` (undefined when no log line has it): a kept workspace's owner. */
  async principalOf(executionId: string): Promise<string | undefined> {
    await this.writer.flush();
    return this.withStore(async (store) => {
      await this.caughtUp(store);
      return store.entries.read(executionId)?.principal;
    });
  }

  /** Apply retention now (also run by the timer once `startRetention` was called). */
  async runRetention(now = Date.now()): Promise<RetentionReport> {
    const cut = cutoffs(this.options.retentionDays, now);
    if (!this.store && !(await mayHaveExpired(this.options.logDir, cut)))
      return { removedEntries: 0, rewrittenFiles: [], deletedFiles: [], expired: [] };
    return this.withStore(async (store) => {
      await this.caughtUp(store);
      this.refresh(store, true);
      const report = await applyRetention(this.options.logDir, this.writer, store, cut, () => this.closed);
      if (report.expired.length > 0) await this.options.onExpired?.(report.expired);
      if (report.removedEntries > 0 || report.deletedFiles.length > 0) {
        log(
          'info',
          `retention removed ${report.removedEntries} expired entries ` +
            `(${report.deletedFiles.length} files deleted, ${report.rewrittenFiles.length} rewritten)`,
        );
      }
      return report;
    });
  }

  /**
   * Run retention in the background: right after the index first catches up, after 30 s, then
   * hourly. The timers are unref'd: they never keep the process alive.
   */
  startRetention(): void {
    if (!this.closed) this.retention.start();
  }

  /** Finish pending appends and index updates, stop the timers and close the database. */
  async close(): Promise<void> {
    if (this.closed) return;
    await this.writer.flush();
    this.closed = true;
    await Promise.allSettled([this.catchUp, this.retention.stop()]);
    clearTimeout(this.dirtyTask);
    this.dirtyTask = undefined;
    try {
      // An index never opened stays so: the next search, here or in the next server, catches up.
      if (this.store && this.dirty.size > 0) this.indexDirty(this.store);
    } catch (error) {
      // The JSONL line is written; the next start-up's catch-up indexes it.
      log('warn', `could not update the search index: ${(error as Error).message}`);
    } finally {
      this.store?.close();
      this.store = undefined;
    }
  }

  private open(): IndexStore {
    if (this.closed) throw new Error('the execution log index is closed');
    if (this.store && !this.store.isCurrent()) {
      log('info', 'index.db was removed or replaced; switching to the current one');
      // Never close a handle on a file that was unlinked under it: SQLite would delete the
      // -wal/-shm of the new index.db by name. The handle lives until the process exits.
      this.retired.push(this.store);
      this.store = undefined;
      this.catchUp = undefined;
    }
    this.store ??= IndexStore.open(this.options.indexPath, this.options.logDir);
    return this.store;
  }

  /** Run `task` on the open store; if the database turns out damaged, rebuild it and retry once. */
  private async withStore<T>(task: (store: IndexStore) => Promise<T>): Promise<T> {
    try {
      return await task(this.open());
    } catch (error) {
      if (!isCorruption(error)) throw error;
      log('warn', `search index is damaged (${(error as Error).message}); rebuilding it from the JSONL logs`);
      this.discardStore();
      return await task(this.open());
    }
  }

  private discardStore(): void {
    this.store?.close();
    this.store = undefined;
    this.catchUp = undefined;
    removeIndexFiles(this.options.indexPath);
  }

  /** The first call indexes every log file (new bytes only); later calls return at once. */
  private caughtUp(store: IndexStore): Promise<void> {
    this.catchUp ??= this.indexEverything(store).then(
      () => {
        if (this.retention.started) setTimeout(() => this.retention.runNow(), 0).unref();
      },
      (error: unknown) => {
        this.catchUp = undefined; // let the next call try again
        throw error;
      },
    );
    return this.catchUp;
  }

  private async indexEverything(store: IndexStore): Promise<void> {
    const files = store.indexer.listLogFiles();
    store.indexer.dropVanished(files);
    for (const name of files) {
      while (!this.closed && !store.indexer.step(name)) await yieldToLoop();
      if (this.closed) return;
    }
    this.lastScan = Date.now();
  }

  /** Index what this process appended, and (throttled, or when forced) what others did. */
  private refresh(store: IndexStore, force: boolean): void {
    this.indexDirty(store);
    if (!force && Date.now() - this.lastScan < RESCAN_MS) return;
    const files = store.indexer.listLogFiles();
    store.indexer.dropVanished(files);
    for (const name of files) store.indexer.syncFile(name);
    this.lastScan = Date.now();
  }

  private noteAppended(file: string): void {
    if (this.closed) return;
    this.dirty.add(file);
    if (!this.store) return; // the first search catches up
    // Batched, after a quiet moment: indexing never delays a result, and a burst of sends is
    // indexed in one go. A search catches up with whatever is still pending first.
    this.dirtyTask ??= setTimeout(() => {
      this.dirtyTask = undefined;
      if (this.closed) return;
      try {
        this.indexDirty(this.open());
      } catch (error) {
        if (isCorruption(error)) this.discardStore();
        log('warn', `could not update the search index: ${(error as Error).message}`);
      }
    }, INDEX_DELAY_MS);
    this.dirtyTask.unref();
  }

  private indexDirty(store: IndexStore): void {
    for (const file of [...this.dirty]) {
      this.dirty.delete(file);
      store.indexer.syncFile(file);
    }
  }
}
