import { closeSync, fstatSync, openSync, readdirSync, readSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { Statement } from 'better-sqlite3';
import { LOCAL_PRINCIPAL, log } from '../../util/index.js';
import { parseLogFileName } from '../files.js';
import { facetTokens, ID_SLOTS, ownerToken, sessionToken, timeKey } from '../keys.js';
import { codePreview, type ExecutionLine, errorPreview, executedAt, parseLine, statusOf } from '../lines.js';
import type { Db } from './db.js';

// About 2,000 entries: one transaction that blocks the event loop for tens of ms, not seconds.
const CHUNK_BYTES = 1024 * 1024;
const NEWLINE = 0x0a;

interface LogFile {
  name: string;
  id: number;
}

interface FileRow {
  id: number;
  ino: number;
  offset: number;
}

/**
 * Brings the index up to date with the JSONL files, a file at a time from the byte offset
 * indexed so far. Each step is one IMMEDIATE transaction that reads the offset, the new bytes and
 * writes rows and the new offset together, so processes sharing the index never index a line
 * twice or skip one. A file replaced by retention (new inode) or shrunk is re-indexed from 0.
 */
export class Indexer {
  /** Rows added per `principal\nlanguage\nstatus` in the current transaction, added to `counts` at its end. */
  private readonly counted = new Map<string, number>();
  private readonly stmt: {
    file: Statement<[string], FileRow>;
    setFile: Statement<[string, number, number]>;
    dropFile: Statement<[number]>;
    listFiles: Statement<[], { name: string }>;
    purgeFts: Statement<[number]>;
    purgeRows: Statement<[number]>;
    fileCounts: Statement<[number], { principal: string; language: string; status: string; n: number }>;
    addCount: Statement<[string, string, string, number]>;
    setSession: Statement<[string, string]>;
    sessionLanguage: Statement<[string], { language: string }>;
    exists: Statement<[string], unknown>;
    lastInSlot: Statement<[number, number], { id: number | null }>;
    insert: Statement<unknown[]>;
    insertFts: Statement<[number, string, string, string, string, string, string, string]>;
  };

  constructor(
    private readonly db: Db,
    private readonly dir: string,
  ) {
    this.stmt = {
      file: db.prepare('SELECT id, ino, offset FROM files WHERE name = ?'),
      setFile: db.prepare(
        `INSERT INTO files (name, ino, offset) VALUES (?, ?, ?)
         ON CONFLICT (name) DO UPDATE SET ino = excluded.ino, offset = excluded.offset`,
      ),
      dropFile: db.prepare('DELETE FROM files WHERE id = ?'),
      listFiles: db.prepare('SELECT name FROM files'),
      purgeFts: db.prepare(
        'DELETE FROM executions_fts WHERE rowid IN (SELECT id FROM executions WHERE file = ?)',
      ),
      purgeRows: db.prepare('DELETE FROM executions WHERE file = ?'),
      fileCounts: db.prepare(
        `SELECT principal, coalesce(language, '') AS language, status, count(*) AS n FROM executions
         WHERE file = ? GROUP BY 1, 2, 3`,
      ),
      addCount: db.prepare(
        `INSERT INTO counts (principal, language, status, n) VALUES (?, ?, ?, ?)
         ON CONFLICT (principal, language, status) DO UPDATE SET n = n + excluded.n`,
      ),
      setSession: db.prepare('INSERT OR REPLACE INTO sessions (session_id, language) VALUES (?, ?)'),
      sessionLanguage: db.prepare('SELECT language FROM sessions WHERE session_id = ?'),
      exists: db.prepare('SELECT 1 FROM executions WHERE execution_id = ?'),
      lastInSlot: db.prepare('SELECT max(id) AS id FROM executions WHERE id BETWEEN ? AND ?'),
      insert: db.prepare(
        `INSERT INTO executions (id, execution_id, session_id, language, status, exit_code,
           duration_ms, executed_at, executed_ms, code_preview, error_preview, file, offset, length,
           principal, script_name)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      ),
      insertFts: db.prepare(
        `INSERT INTO executions_fts (rowid, code, stdout, stderr, script, facet, session, owner)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
      ),
    };
  }

  /** Log files present on disk, in a stable order (oldest daily files first). */
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

  /** Files the index knows that are gone from disk: their rows leave the index. */
  dropVanished(present: readonly string[]): void {
    const onDisk = new Set(present);
    const gone = this.stmt.listFiles.all().filter((row) => !onDisk.has(row.name));
    if (gone.length === 0) return;
    this.db
      .transaction(() => {
        for (const { name } of gone) this.forget(name);
      })
      .immediate();
  }

  /** Index up to `maxBytes` of new lines of `name`. Returns true when the file is fully indexed. */
  step(name: string, maxBytes = CHUNK_BYTES): boolean {
    this.counted.clear(); // nothing from a failed transaction carries over
    return this.db
      .transaction(() => {
        const done = this.stepLocked(name, maxBytes);
        this.flushCounts();
        return done;
      })
      .immediate();
  }

  /** Index everything new in `name` now (bounded by the file's growth since the last step). */
  syncFile(name: string): void {
    if (this.upToDate(name)) return;
    while (!this.step(name)) {}
  }

  /** Lock-free check that `name` has nothing new: same inode, indexed to its end. */
  private upToDate(name: string): boolean {
    const row = this.stmt.file.get(name);
    if (!row) return false;
    try {
      const { ino, size } = statSync(join(this.dir, name));
      return ino === row.ino && size === row.offset;
    } catch {
      return false; // gone, or unreadable: the locked step decides
    }
  }

  private stepLocked(name: string, maxBytes: number): boolean {
    let fd: number;
    try {
      fd = openSync(join(this.dir, name), 'r');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
      this.forget(name);
      return true;
    }
    try {
      const { ino, size } = fstatSync(fd);
      let row = this.stmt.file.get(name);
      let offset = row?.offset ?? 0;
      if (row && (row.ino !== ino || size < row.offset)) {
        this.purge(row.id);
        offset = 0;
      }
      if (!row || row.ino !== ino || row.offset !== offset) {
        this.stmt.setFile.run(name, ino, offset);
        row = this.stmt.file.get(name) as FileRow;
      }
      if (offset >= size) return true;
      const consumed = this.indexBytes(fd, { name, id: row.id }, offset, size, maxBytes);
      this.stmt.setFile.run(name, ino, offset + consumed);
      // A trailing line without its newline is still being written: wait for the rest.
      return offset + consumed >= size || consumed === 0;
    } finally {
      closeSync(fd);
    }
  }

  /** Index the complete lines in [offset, …) up to about maxBytes; returns bytes consumed. */
  private indexBytes(fd: number, file: LogFile, offset: number, size: number, maxBytes: number): number {
    let want = Math.min(maxBytes, size - offset);
    let buffer = Buffer.allocUnsafe(want);
    let read = readSync(fd, buffer, 0, want, offset);
    let end = buffer.lastIndexOf(NEWLINE, read - 1);
    // One line longer than the chunk: read on until its newline (or the end of the file).
    while (end < 0 && offset + read < size) {
      want = Math.min(want * 2, size - offset);
      buffer = Buffer.allocUnsafe(want);
      read = readSync(fd, buffer, 0, want, offset);
      end = buffer.lastIndexOf(NEWLINE, read - 1);
    }
    if (end < 0) return 0;
    let start = 0;
    while (start <= end) {
      const stop = buffer.indexOf(NEWLINE, start);
      if (stop > start)
        this.indexLine(file, buffer.toString('utf8', start, stop), offset + start, stop - start);
      start = stop + 1;
    }
    return end + 1;
  }

  private indexLine(file: LogFile, text: string, offset: number, length: number): void {
    if (text.trim() === '') return;
    const parsed = parseLine(text);
    switch (parsed.kind) {
      case 'execution':
        this.insert(parsed.line, file.id, offset, length);
        return;
      case 'session_start':
        this.stmt.setSession.run(parsed.sessionId, parsed.language);
        return;
      case 'corrupt':
        log(
          'warn',
          `${join(this.dir, file.name)}: skipped a corrupt line at byte ${offset} (${parsed.reason})`,
        );
        return;
      case 'other':
        return;
    }
  }

  private insert(line: ExecutionLine, fileId: number, offset: number, length: number): void {
    // An entry seen before (the same line in two files, or indexed by another process) stays once.
    if (this.stmt.exists.get(line.execution_id) !== undefined) return;
    const sessionId = line.session_id ?? null;
    const language =
      line.language ??
      (sessionId === null ? null : (this.stmt.sessionLanguage.get(sessionId)?.language ?? null));
    const status = statusOf(line);
    const principal = line.principal ?? LOCAL_PRINCIPAL;
    const at = executedAt(line);
    const ms = Date.parse(at);
    const slot = timeKey(ms);
    const last = this.stmt.lastInSlot.get(slot, slot + ID_SLOTS - 1)?.id;
    const id = this.insertRow(last === null || last === undefined ? slot : last + 1, [
      line.execution_id,
      sessionId,
      language,
      status,
      line.exit_code,
      Math.round(line.duration_ms),
      at,
      ms,
      codePreview(line.code),
      errorPreview(line, status),
      fileId,
      offset,
      length,
      principal,
      line.script_name ?? null,
    ]);
    const key = `${principal}\n${language ?? ''}\n${status}`;
    this.counted.set(key, (this.counted.get(key) ?? 0) + 1);
    this.stmt.insertFts.run(
      id,
      line.code,
      line.stdout,
      line.stderr,
      line.script_name ?? '',
      facetTokens(language, status),
      sessionId === null ? '' : sessionToken(sessionId),
      ownerToken(principal),
    );
  }

  private flushCounts(): void {
    for (const [key, n] of this.counted) {
      const [principal = LOCAL_PRINCIPAL, language = '', status = ''] = key.split('\n');
      this.stmt.addCount.run(principal, language, status, n);
    }
    this.counted.clear();
  }

  /** Insert at the first free id from `id` on (a full millisecond slot spills into the next). */
  private insertRow(id: number, values: unknown[]): number {
    for (let candidate = id; ; candidate++) {
      try {
        this.stmt.insert.run(candidate, ...values);
        return candidate;
      } catch (error) {
        if ((error as { code?: string }).code !== 'SQLITE_CONSTRAINT_PRIMARYKEY') throw error;
      }
    }
  }

  private forget(name: string): void {
    const row = this.stmt.file.get(name);
    if (!row) return;
    this.purge(row.id);
    this.stmt.dropFile.run(row.id);
  }

  /** Remove every row of `name` from the table, the FTS index and the counts. */
  private purge(fileId: number): void {
    for (const { principal, language, status, n } of this.stmt.fileCounts.all(fileId)) {
      this.stmt.addCount.run(principal, language, status, -n);
    }
    this.stmt.purgeFts.run(fileId);
    this.stmt.purgeRows.run(fileId);
  }
}
