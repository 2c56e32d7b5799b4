import { appendFile, mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { log } from '../util/index.js';
import type { ExecutionLogEntry } from './types.js';

/**
 * Appends JSONL entries. Each entry is one `appendFile` (one O_APPEND write), and writes from
 * this process are chained, so concurrent runs never interleave a line.
 */
export class LogWriter {
  private queue: Promise<void> = Promise.resolve();
  private dirReady: Promise<unknown> | undefined;

  constructor(readonly dir: string) {}

  /** Append to the daily execution log of the entry's date (UTC). */
  appendExecution(entry: ExecutionLogEntry): Promise<void> {
    return this.append(`executions-${entry.executed_at.slice(0, 10)}.jsonl`, entry);
  }

  /** Append to `session-<id>.jsonl` (session_start, execution, package_install, session_end). */
  appendSession(sessionId: string, entry: object): Promise<void> {
    return this.append(`session-${sessionId}.jsonl`, entry);
  }

  append(file: string, entry: object): Promise<void> {
    const line = `${JSON.stringify(entry)}\n`;
    const write = this.queue.then(async () => {
      this.dirReady ??= mkdir(this.dir, { recursive: true }).catch((error: Error) => {
        this.dirReady = undefined; // retry on the next write
        throw error;
      });
      await this.dirReady;
      await appendFile(join(this.dir, file), line, 'utf8');
    });
    // A failed write is reported, never silently lost, and does not block later writes.
    this.queue = write.catch((error: Error) => log('error', `could not write log ${file}: ${error.message}`));
    return write;
  }

  /** Resolves when every append so far has finished. */
  flush(): Promise<void> {
    return this.queue;
  }
}
