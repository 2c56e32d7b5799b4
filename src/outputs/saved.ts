import { constants } from 'node:fs';
import { type FileHandle, open, readdir, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { CodexecError, InvalidInputError } from '../errors/index.js';
import { log, principalFolder, readUpTo } from '../util/index.js';
import { type SavedSlice, sliceText } from './slice.js';
import { type SavedInfo, SavedStream } from './stream.js';

export type SavedStreamName = 'stdout' | 'stderr';
export const SAVED_STREAMS: readonly SavedStreamName[] = ['stdout', 'stderr'];

/** exec_ + 12 hex: the only names a saved file can have (nothing else reaches a path). */
export const EXECUTION_ID = /^exec_[0-9a-f]{12}$/;

/** A principal keeps at most this many times CODEXEC_MAX_SAVED_OUTPUT_BYTES in all. */
export const TOTAL_FACTOR = 16;

/** The execution kept no such output (it fit, saving is off, or it was removed). */
export class SavedOutputNotFoundError extends CodexecError {
  constructor(message: string) {
    super('NOT_FOUND', message);
    this.name = 'SavedOutputNotFoundError';
  }
}

/** A saved stream too big for one answer: page it. */
export class SavedOutputTooLargeError extends CodexecError {
  constructor(message: string) {
    super('LIMIT_REACHED', message);
    this.name = 'SavedOutputTooLargeError';
  }
}

/** A result's `output_saved`: each stream that was truncated and kept. */
export interface OutputSaved {
  readonly stdout?: SavedInfo;
  readonly stderr?: SavedInfo;
}

/** The bytes a run kept, both streams. */
export function savedBytes(saved: OutputSaved): number {
  return (saved.stdout?.bytes ?? 0) + (saved.stderr?.bytes ?? 0);
}

/**
 * Output past the truncation cap, kept for paging:
 * `$CODEXEC_HOME/output/<principal folder>/<execution_id>.stdout|.stderr`, 0600 in 0700
 * directories. The principal's folder is the ownership check of last resort (another principal
 * looks in its own); callers check the execution log first, so both say "not found" alike.
 */
export class SavedOutputs {
  private readonly root: string;
  /** Each principal's saved bytes as this process last counted them, plus what it saved since. */
  private readonly totals = new Map<string, number>();

  constructor(
    home: string,
    private readonly maxBytes: number,
  ) {
    this.root = join(home, 'output');
  }

  get enabled(): boolean {
    return this.maxBytes > 0;
  }

  /** The sinks of one run's two streams (undefined when saving is off). */
  streams(principal: string, executionId: string): Record<SavedStreamName, SavedStream> | undefined {
    if (!this.enabled) return undefined;
    const make = (stream: SavedStreamName) =>
      new SavedStream(() => this.pathOf(principal, executionId, stream), executionId, stream, this.maxBytes);
    return { stdout: make('stdout'), stderr: make('stderr') };
  }

  /** `length` bytes from `offset`, cut to whole characters (see sliceText). */
  async read(
    principal: string,
    executionId: string,
    stream: SavedStreamName,
    offset: number,
    length: number,
  ): Promise<SavedSlice> {
    return this.withFile(principal, executionId, stream, async (handle, total) => {
      const start = Math.min(offset, total);
      // 3 bytes before and 7 after: enough to find where the characters at each end begin, and
      // to take a whole character where `length` is shorter than it.
      const from = Math.max(0, start - 3);
      const want = Math.min(total, start + length + 7) - from;
      const buffer = Buffer.alloc(want);
      const { bytesRead } = await handle.read(buffer, 0, want, from);
      return sliceText(buffer.subarray(0, bytesRead), from, start, length, total);
    });
  }

  /** The whole saved stream as text, when it is at most `limit` bytes. */
  async readAll(principal: string, executionId: string, stream: SavedStreamName, limit: number) {
    return this.withFile(principal, executionId, stream, async (handle, total) => {
      const tooLarge = (size: string) =>
        new SavedOutputTooLargeError(
          `the saved ${stream} of ${executionId} is ${size} bytes; the limit of one read is ${limit} ` +
            `(CODEXEC_MAX_FILE_TRANSFER_BYTES): page it with read_file {"execution_id": "${executionId}", "path": "${stream}", "offset": 0}`,
        );
      if (total > limit) throw tooLarge(String(total));
      // A stream still being written may have grown since the stat: the read is what counts.
      const read = await readUpTo(handle, limit);
      if (read.over) throw tooLarge(`more than ${limit}`);
      return read.data.toString('utf8');
    });
  }

  /** Whether the execution kept `stream`. */
  async has(principal: string, executionId: string, stream: SavedStreamName): Promise<boolean> {
    if (!EXECUTION_ID.test(executionId)) return false;
    return stat(this.pathOf(principal, executionId, stream)).then(
      (found) => found.isFile(),
      () => false,
    );
  }

  /** Remove what these executions kept (their log entries expired). */
  async remove(entries: ReadonlyArray<{ executionId: string; principal: string }>): Promise<void> {
    for (const { executionId, principal } of entries) {
      if (!EXECUTION_ID.test(executionId)) continue;
      for (const stream of SAVED_STREAMS)
        await rm(this.pathOf(principal, executionId, stream), { force: true });
    }
  }

  /**
   * Keep a principal's saved output within TOTAL_FACTOR × CODEXEC_MAX_SAVED_OUTPUT_BYTES, the
   * oldest files going first; called after each run that kept `added` bytes. The directory is
   * listed only when the running count (from this process's last listing) says the budget may be
   * passed, not after every run: removals it does not see (retention, another server on the same
   * home) only make the next listing come sooner.
   */
  async trim(principal: string, added: number): Promise<void> {
    const known = this.totals.get(principal);
    if (known !== undefined && known + added <= this.budget) {
      this.totals.set(principal, known + added);
      return;
    }
    try {
      this.totals.set(principal, await this.trimNow(principal));
    } catch (error) {
      this.totals.delete(principal);
      log('warn', `could not trim the saved output of ${principal}: ${(error as Error).message}`);
    }
  }

  /** List the principal's files, remove the oldest past the budget; the bytes left. */
  private async trimNow(principal: string): Promise<number> {
    const dir = join(this.root, principalFolder(principal));
    const names = await readdir(dir).catch(() => [] as string[]);
    const files = (
      await Promise.all(
        names.map(async (name) => {
          const found = await stat(join(dir, name)).catch(() => undefined);
          return found?.isFile() ? { name, size: found.size, mtimeMs: found.mtimeMs } : undefined;
        }),
      )
    ).filter((file) => file !== undefined);
    let total = files.reduce((sum, file) => sum + file.size, 0);
    if (total <= this.budget) return total;
    files.sort((a, b) => a.mtimeMs - b.mtimeMs);
    for (const file of files) {
      if (total <= this.budget) break;
      await rm(join(dir, file.name), { force: true });
      total -= file.size;
    }
    log(
      'info',
      `saved output of ${principal} trimmed to ${total} bytes (CODEXEC_MAX_SAVED_OUTPUT_BYTES x ${TOTAL_FACTOR})`,
    );
    return total;
  }

  private get budget(): number {
    return TOTAL_FACTOR * this.maxBytes;
  }

  private pathOf(principal: string, executionId: string, stream: SavedStreamName): string {
    return join(this.root, principalFolder(principal), `${executionId}.${stream}`);
  }

  private async withFile<T>(
    principal: string,
    executionId: string,
    stream: SavedStreamName,
    task: (handle: FileHandle, total: number) => Promise<T>,
  ): Promise<T> {
    if (!EXECUTION_ID.test(executionId))
      throw new InvalidInputError(`execution_id ${JSON.stringify(executionId)} is not exec_ + 12 hex`);
    let handle: FileHandle | undefined;
    try {
      handle = await open(
        this.pathOf(principal, executionId, stream),
        constants.O_RDONLY | constants.O_NOFOLLOW,
      );
      return await task(handle, (await handle.stat()).size);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT')
        throw new SavedOutputNotFoundError(
          `${executionId} kept no ${stream}: only output past the result's cap is saved ` +
            '(CODEXEC_MAX_OUTPUT_CHARS; CODEXEC_MAX_SAVED_OUTPUT_BYTES=0 keeps none), until the log entry expires',
        );
      throw error;
    } finally {
      await handle?.close();
    }
  }
}

export type { SavedInfo };
