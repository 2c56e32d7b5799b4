import { createHash } from 'node:crypto';
import { closeSync, fstatSync, openSync, readSync, writeSync } from 'node:fs';
import { type FileHandle, mkdir, open } from 'node:fs/promises';
import { join } from 'node:path';
import { currentPrincipal, log } from '../util/index.js';
import type { ExecutionLogEntry } from './types.js';

export interface LogWriterOptions {
  /** Called after `line` (JSON and its newline) has been appended to `file` (a name inside the log dir). */
  readonly onAppend?: (file: string, line: string) => void;
}

/**
 * Appends JSONL entries. Each line is one write(2) on an O_APPEND descriptor, so lines from
 * several processes sharing the directory never interleave; writes from this process are chained
 * through one queue, which retention also joins (`exclusive`) to rewrite a file safely.
 */
export class LogWriter {
  private queue: Promise<void> = Promise.resolve();
  private dirReady: Promise<unknown> | undefined;

  constructor(
    readonly dir: string,
    private readonly options: LogWriterOptions = {},
  ) {}

  /** Append to the daily execution log of the entry's date (UTC). */
  appendExecution(entry: ExecutionLogEntry): Promise<void> {
    return this.append(`executions-${entry.executed_at.slice(0, 10)}.jsonl`, entry);
  }

  /** Append to `session-<id>.jsonl` (session_start, execution, package_install, session_end). */
  appendSession(sessionId: string, entry: object): Promise<void> {
    return this.append(`session-${sessionId}.jsonl`, entry);
  }

  /**
   * Each entry records who it was written for (`principal`, util/principal.ts), taken now, at the
   * call: search and get_execution_log show a principal only its own.
   */
  append(file: string, entry: object): Promise<void> {
    const text = `${JSON.stringify({ ...boundedCode(entry), principal: currentPrincipal() })}\n`;
    return this.exclusive(async () => {
      this.dirReady ??= mkdir(this.dir, { recursive: true, mode: 0o700 }).catch((error: Error) => {
        this.dirReady = undefined; // retry on the next write
        throw error;
      });
      await this.dirReady;
      const path = join(this.dir, file);
      // A line torn by a process that died mid-write would swallow ours: start on a fresh line.
      // (Checked on every append — tens of µs — since any process sharing the file may die.)
      if (Buffer.byteLength(text) <= SYNC_BYTES) {
        appendSmallLine(path, text);
      } else {
        const fresh = await endsWithNewline(path);
        await appendLine(path, Buffer.from(fresh ? text : `\n${text}`, 'utf8'));
      }
      this.options.onAppend?.(file, text);
    }, `could not write log ${file}`);
  }

  /**
   * Run `task` when every earlier append has finished, holding later appends back until it is
   * done. A failure is reported (and returned), never silently lost, and does not block the queue.
   */
  exclusive<T>(task: () => Promise<T>, what = 'log task'): Promise<T> {
    const run = this.queue.then(task);
    this.queue = run.then(
      () => {},
      (error: Error) => log('error', `${what}: ${error.message}`),
    );
    return run;
  }

  /** Resolves when every append so far has finished. */
  flush(): Promise<void> {
    return this.queue;
  }
}

/**
 * Lines up to this size are appended with synchronous calls: a few µs each, where the same calls
 * through the thread pool cost ~0.5 ms on the result path. Larger ones (big code or output) go
 * asynchronously, not to stall the event loop.
 */
const SYNC_BYTES = 64 * 1024;

/** endsWithNewline + appendLine for a small line, on one descriptor opened for read and append. */
function appendSmallLine(path: string, text: string): void {
  const fd = openSync(path, 'a+', 0o600);
  try {
    const { size } = fstatSync(fd);
    const last = Buffer.alloc(1);
    const torn = size > 0 && readSync(fd, last, 0, 1, size - 1) === 1 && last[0] !== 0x0a;
    const line = Buffer.from(torn ? `\n${text}` : text, 'utf8');
    const written = writeSync(fd, line);
    if (written !== line.length) {
      throw new Error(`short write to ${path} (${written} of ${line.length} bytes); the line is torn`);
    }
  } finally {
    closeSync(fd);
  }
}

async function endsWithNewline(path: string): Promise<boolean> {
  let handle: FileHandle;
  try {
    handle = await open(path, 'r');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return true;
    throw error;
  }
  try {
    const { size } = await handle.stat();
    if (size === 0) return true;
    const last = Buffer.alloc(1);
    await handle.read(last, 0, 1, size - 1);
    return last[0] === 0x0a;
  } finally {
    await handle.close();
  }
}

/** One write(2) with O_APPEND: the kernel places the whole line at the end of the file atomically. */
async function appendLine(path: string, line: Buffer): Promise<void> {
  const handle = await open(path, 'a', 0o600);
  try {
    const { bytesWritten } = await handle.write(line, 0, line.length);
    if (bytesWritten !== line.length) {
      throw new Error(`short write to ${path} (${bytesWritten} of ${line.length} bytes); the line is torn`);
    }
  } finally {
    await handle.close();
  }
}

/** Code kept in a log entry; beyond it, the start, `code_truncated` and the whole's sha256 (as the audit). */
export const MAX_LOGGED_CODE_CHARS = 100_000;

/**
 * An entry whose `code` is over MAX_LOGGED_CODE_CHARS keeps its start (9 MB of code once made
 * ~36 MB of log and index per call); the output beside it is bounded already (CODEXEC_MAX_OUTPUT_CHARS).
 */
function boundedCode(entry: object): object {
  const code = (entry as { code?: unknown }).code;
  if (typeof code !== 'string' || code.length <= MAX_LOGGED_CODE_CHARS) return entry;
  return {
    ...entry,
    code: code.slice(0, MAX_LOGGED_CODE_CHARS),
    code_truncated: true,
    code_sha256: createHash('sha256').update(code, 'utf8').digest('hex'),
  };
}
