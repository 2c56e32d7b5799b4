import { statSync } from 'node:fs';
import type { Statement } from 'better-sqlite3';
import type { Cutoffs, RetentionIndex } from '../retention.js';
import { type Db, openIndexDb } from './db.js';
import { EntryReader } from './entries.js';
import { Indexer } from './indexer.js';
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
    private readonly path: string,
    private readonly ino: number,
  ) {
    this.indexer = new Indexer(db, dir);
    this.searcher = new Searcher(db);
    this.entries = new EntryReader(db, dir);
    this.expired = db.prepare(
      `SELECT count(*) AS n FROM executions WHERE file = (SELECT id FROM files WHERE name = ?) AND (
         (session_id IS NOT NULL AND executed_ms < ?) OR
         (session_id IS NULL AND status = 'success' AND executed_ms < ?) OR
         (session_id IS NULL AND status <> 'success' AND executed_ms < ?))`,
    );
  }

  static open(path: string, dir: string): IndexStore {
    const db = openIndexDb(path, dir);
    return new IndexStore(db, dir, path, statSync(path).ino);
  }

  /** False once index.db was deleted or replaced (by a rebuild in another process, or by hand). */
  isCurrent(): boolean {
    return statSync(this.path, { throwIfNoEntry: false })?.ino === this.ino;
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
