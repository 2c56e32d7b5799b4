import type { Statement } from 'better-sqlite3';
import { type Db, openIndexDb } from './db.js';
import { EntryReader } from './entry.js';
import { Indexer } from './indexer.js';
import type { Cutoffs, RetentionIndex } from './retention.js';
import { Searcher } from './search.js';

/** One open index: the database and the parts that use it. Closing releases the handle. */
export class IndexStore implements RetentionIndex {
  readonly indexer: Indexer;
  readonly searcher: Searcher;
  readonly entries: EntryReader;
  private readonly expired: Statement<[string, number, number, number], { n: number }>;

  private constructor(
    private readonly db: Db,
    dir: string,
  ) {
    this.indexer = new Indexer(db, dir);
    this.searcher = new Searcher(db);
    this.entries = new EntryReader(db, dir);
    this.expired = db.prepare(
      `SELECT count(*) AS n FROM executions WHERE file = ? AND (
         (session_id IS NOT NULL AND executed_ms < ?) OR
         (session_id IS NULL AND status = 'success' AND executed_ms < ?) OR
         (session_id IS NULL AND status <> 'success' AND executed_ms < ?))`,
    );
  }

  static open(path: string, dir: string): IndexStore {
    return new IndexStore(openIndexDb(path, dir), dir);
  }

  countExpired(file: string, cut: Cutoffs): number {
    return this.expired.get(file, cut.session, cut.success, cut.failure)?.n ?? 0;
  }

  syncFile(file: string): void {
    this.indexer.syncFile(file);
  }

  listLogFiles(): string[] {
    return this.indexer.listLogFiles();
  }

  close(): void {
    if (this.db.open) this.db.close();
  }
}
