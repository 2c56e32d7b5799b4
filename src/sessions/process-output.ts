import { StringDecoder } from 'node:string_decoder';
import type { StreamRedactor } from '../policy/index.js';

/** One read of a process's output. */
export interface OutputPage {
  /** The text from `offset` (masked, UTF-8 decoded). */
  readonly output: string;
  /** Where this text begins: the asked offset, or the first byte still kept if that was later. */
  readonly offset: number;
  /** Where the next read should begin. */
  readonly next_offset: number;
  /** Bytes between the asked offset and `offset` that were dropped (only the last bytes are kept). */
  readonly dropped_bytes: number;
  /** More output is already kept past next_offset (this read was capped). */
  readonly more: boolean;
}

/**
 * A background process's output, stdout and stderr as one stream, masked, kept as its last
 * `maxBytes` bytes. Offsets count bytes of that masked UTF-8 text from the process's first output,
 * so an offset stays valid as the front is dropped: `start` says where what is kept begins.
 */
export class ProcessOutput {
  private readonly decoder = new StringDecoder('utf8');
  private chunks: Buffer[] = [];
  private kept = 0;
  /** Offset of the first byte kept. */
  start = 0;

  constructor(
    private readonly maxBytes: number,
    private readonly redactor?: StreamRedactor,
  ) {}

  /** Offset just past the last byte written. */
  get end(): number {
    return this.start + this.kept;
  }

  push(chunk: Buffer): void {
    const decoded = this.decoder.write(chunk);
    this.add(this.redactor && decoded ? this.redactor.write(decoded) : decoded);
  }

  /** The process ended: what the decoder and the redactor held back. */
  finish(): void {
    const decoded = this.decoder.end();
    this.add(this.redactor ? this.redactor.write(decoded) + this.redactor.end() : decoded);
  }

  read(offset: number, maxBytes: number): OutputPage {
    const from = Math.min(Math.max(offset, this.start), this.end);
    const all = Buffer.concat(this.chunks);
    let at = from - this.start;
    // Dropping the front may have cut a character: start at the next whole one.
    const inside = (i: number) => i < all.length && ((all[i] ?? 0) & 0xc0) === 0x80;
    while (from > offset && inside(at)) at += 1;
    let stop = Math.min(all.length, at + maxBytes);
    while (stop > at && inside(stop)) stop -= 1;
    // At least one whole character, so a caller that pages on always moves forward.
    if (stop === at && at < all.length) for (stop = at + 1; inside(stop); ) stop += 1;
    return {
      output: all.subarray(at, stop).toString('utf8'),
      offset: this.start + at,
      next_offset: this.start + stop,
      dropped_bytes: Math.max(0, this.start + at - offset),
      more: stop < all.length,
    };
  }

  private add(text: string): void {
    if (!text) return;
    const bytes = Buffer.from(text, 'utf8');
    this.chunks.push(bytes);
    this.kept += bytes.length;
    while (this.kept > this.maxBytes) {
      const first = this.chunks[0] as Buffer;
      const over = this.kept - this.maxBytes;
      if (first.length <= over) {
        this.chunks.shift();
        this.kept -= first.length;
        this.start += first.length;
      } else {
        this.chunks[0] = first.subarray(over);
        this.kept -= over;
        this.start += over;
      }
    }
  }
}
