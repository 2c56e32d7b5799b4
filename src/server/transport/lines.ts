/** One newline-delimited frame: whole when it fits the limit, else only its two ends. */
export type Frame =
  | { readonly kind: 'line'; readonly bytes: Buffer }
  | { readonly kind: 'oversize'; readonly head: Buffer; readonly tail: Buffer; readonly bytes: number };

/** How much of each end of an oversize frame is kept: ids sit at the ends, never far in. */
export const WINDOW_BYTES = 64 * 1024;

const NEWLINE = 0x0a;
const CR = 0x0d;

/**
 * Splits a byte stream into newline-delimited frames with bounded memory. A frame is held
 * whole up to `maxBytes`; past that only its first and last `window` bytes are kept while the
 * rest streams through, so a 200 MB line costs ~128 KiB, not 200 MB. Chunks are kept as a list
 * and joined once per frame: joining on every chunk (as a growing Buffer) is quadratic.
 */
export class LineSplitter {
  private parts: Buffer[] = [];
  private size = 0;
  private head: Buffer | undefined;
  private tail: Buffer | undefined;
  private tailFill = 0;

  constructor(
    private readonly maxBytes: number,
    private readonly window = WINDOW_BYTES,
  ) {}

  /** The frames `chunk` completes, in order. */
  push(chunk: Buffer): Frame[] {
    const frames: Frame[] = [];
    let start = 0;
    for (;;) {
      const end = chunk.indexOf(NEWLINE, start);
      if (end === -1) {
        if (start < chunk.length) this.append(chunk.subarray(start));
        return frames;
      }
      if (end > start) this.append(chunk.subarray(start, end));
      frames.push(this.finish());
      start = end + 1;
    }
  }

  /** Bytes held for the frame in progress (for tests of the memory bound). */
  get heldBytes(): number {
    return this.head ? this.head.length + this.tailFill : this.size;
  }

  private append(piece: Buffer): void {
    this.size += piece.length;
    if (this.head) {
      this.slideTail(piece);
      return;
    }
    this.parts.push(piece);
    if (this.size <= this.maxBytes) return;
    this.head = Buffer.concat(this.parts, Math.min(this.window, this.size));
    this.tail = Buffer.alloc(this.window);
    this.tailFill = 0;
    for (const part of this.parts) this.slideTail(part);
    this.parts = [];
  }

  /**
   * Keep the last `window` bytes in one fixed buffer, shifted in place: allocating per chunk
   * would leave garbage as large as the stream for the collector, and the RSS with it.
   */
  private slideTail(piece: Buffer): void {
    const tail = this.tail as Buffer;
    if (piece.length >= tail.length) {
      piece.copy(tail, 0, piece.length - tail.length);
      this.tailFill = tail.length;
      return;
    }
    const keep = Math.min(this.tailFill, tail.length - piece.length);
    tail.copy(tail, 0, this.tailFill - keep, this.tailFill);
    piece.copy(tail, keep);
    this.tailFill = keep + piece.length;
  }

  private finish(): Frame {
    const size = this.size;
    const { head, tail, parts } = this;
    this.parts = [];
    this.size = 0;
    this.head = undefined;
    this.tail = undefined;
    if (head && tail) {
      const filled = tail.subarray(0, this.tailFill);
      const kept = withoutCr(filled);
      return { kind: 'oversize', head, tail: kept, bytes: size - (filled.length - kept.length) };
    }
    return {
      kind: 'line',
      bytes: withoutCr(parts.length === 1 ? (parts[0] as Buffer) : Buffer.concat(parts)),
    };
  }
}

function withoutCr(bytes: Buffer): Buffer {
  return bytes.length > 0 && bytes[bytes.length - 1] === CR ? bytes.subarray(0, -1) : bytes;
}
