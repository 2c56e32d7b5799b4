import { closeSync, openSync, readSync } from 'node:fs';
import { join } from 'node:path';
import type { Statement } from 'better-sqlite3';
import { LOCAL_PRINCIPAL } from '../../util/index.js';
import { type FullEntry, toFullEntry } from '../entry.js';
import { parseLine } from '../lines.js';
import type { Db } from './db.js';

interface Location {
  file: string;
  offset: number;
  length: number;
  language: string | null;
}

/** Reads an entry back from its JSONL line, found through the index (file, offset, length). */
export class EntryReader {
  private readonly locate: Statement<[string], Location>;

  constructor(
    db: Db,
    private readonly dir: string,
  ) {
    this.locate = db.prepare(
      `SELECT f.name AS file, e.offset, e.length, e.language
       FROM executions e JOIN files f ON f.id = e.file WHERE e.execution_id = ?`,
    );
  }

  /** The indexed file holding `id`, if any (to re-sync it when the read misses). */
  fileOf(id: string): string | undefined {
    return this.locate.get(id)?.file;
  }

  /**
   * The entry and who ran it (lines from before principals are `local`'s), or undefined when the
   * index does not know the id or its line has moved.
   */
  read(id: string): { readonly entry: FullEntry; readonly principal: string } | undefined {
    const where = this.locate.get(id);
    if (!where) return undefined;
    const text = readSlice(join(this.dir, where.file), where.offset, where.length);
    if (text === undefined) return undefined;
    const parsed = parseLine(text);
    if (parsed.kind !== 'execution' || parsed.line.execution_id !== id) return undefined;
    return {
      entry: toFullEntry(parsed.line, where.language),
      principal: parsed.line.principal ?? LOCAL_PRINCIPAL,
    };
  }
}

function readSlice(path: string, offset: number, length: number): string | undefined {
  let fd: number;
  try {
    fd = openSync(path, 'r');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
  try {
    const buffer = Buffer.alloc(length);
    const read = readSync(fd, buffer, 0, length, offset);
    return read === length ? buffer.toString('utf8') : undefined;
  } finally {
    closeSync(fd);
  }
}
