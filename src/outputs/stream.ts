import { closeSync, constants, mkdirSync, openSync, unlinkSync, writeSync } from 'node:fs';
import { dirname } from 'node:path';
import { log, quietly } from '../util/index.js';

/** What a result says of one saved stream (`output_saved.stdout`). */
export interface SavedInfo {
  readonly bytes: number;
  readonly uri: string;
  /** The stream went on past CODEXEC_MAX_SAVED_OUTPUT_BYTES (or the disk refused it): only its start is kept. */
  readonly partial: boolean;
}

/**
 * One stream of one run, written to its file as it arrives (engine's OutputSink): the file is
 * made only when the output outgrows the result's cap (the collector starts writing then), holds
 * at most `maxBytes` (cut at a character's end, so it stays UTF-8) and is never held in memory.
 *
 * Writes are synchronous: each is one piece of a pipe (≤ 64 KiB) into the page cache, µs, and
 * nothing queues up in memory behind a slow disk (an asynchronous stream would buffer whatever
 * the program writes faster than the disk takes it). A write the disk refuses ends the saving:
 * what is kept is marked partial, the run goes on.
 */
export class SavedStream {
  private fd: number | undefined;
  private bytes = 0;
  private partial = false;
  private failed = false;

  /** Found on the first write: most runs' output fits, and theirs costs nothing more. */
  private path = '';

  constructor(
    private readonly locate: () => string,
    private readonly executionId: string,
    private readonly stream: 'stdout' | 'stderr',
    private readonly maxBytes: number,
  ) {}

  get uri(): string {
    return `codexec://exec/${this.executionId}/${this.stream}`;
  }

  /** How to read this stream on from byte `offset`, in one line. */
  pageHint(offset: number): string {
    if (this.partial && this.bytes <= offset) return '[the rest is not kept: saving stopped before it]';
    const call = JSON.stringify({ execution_id: this.executionId, path: this.stream, offset });
    const kept = this.partial ? `; only the first ${this.bytes} bytes are kept` : '';
    return `[the rest: read_file ${call}; offset and length count bytes${kept}]`;
  }

  write(text: string): void {
    if (this.partial || this.failed) return;
    let data = Buffer.from(text, 'utf8');
    const room = this.maxBytes - this.bytes;
    if (data.length > room) {
      data = data.subarray(0, characterEnd(data, room));
      this.partial = true;
    }
    if (data.length === 0) return;
    try {
      if (this.fd === undefined) {
        this.path = this.locate();
        mkdirSync(dirname(this.path), { recursive: true, mode: 0o700 });
        this.fd = openSync(
          this.path,
          constants.O_WRONLY | constants.O_CREAT | constants.O_TRUNC | constants.O_NOFOLLOW,
          0o600,
        );
      }
      for (let at = 0; at < data.length; ) at += writeSync(this.fd, data, at);
      this.bytes += data.length;
    } catch (error) {
      this.failed = true;
      this.partial = true;
      log('warn', `could not save output to ${this.path}: ${(error as Error).message}`);
    }
  }

  /** Close the file; what it kept (undefined: nothing, and no file is left). */
  close(): SavedInfo | undefined {
    if (this.fd !== undefined) quietly(() => closeSync(this.fd as number));
    this.fd = undefined;
    if (this.bytes === 0) {
      if (this.failed && this.path) quietly(() => unlinkSync(this.path));
      return undefined;
    }
    return { bytes: this.bytes, uri: this.uri, partial: this.partial };
  }
}

/**
 * The largest length ≤ `limit` at which `data` (UTF-8) can be cut without splitting a character:
 * back over continuation bytes (10xxxxxx) to the start of the character `limit` falls in.
 */
export function characterEnd(data: Buffer, limit: number): number {
  if (limit >= data.length) return data.length;
  let end = limit;
  while (end > 0 && ((data[end] as number) & 0xc0) === 0x80) end--;
  return end;
}
