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
    return this.head ? this.head.length + (this.tail?.length ?? 0) : this.size;
  }

  private append(piece: Buffer): void {
    this.size += piece.length;
    if (this.head) {
      this.tail = lastBytes([this.tail ?? Buffer.alloc(0), piece], this.window);
      return;
    }
    this.parts.push(piece);
    if (this.size <= this.maxBytes) return;
    this.head = Buffer.concat(this.parts, Math.min(this.window, this.size));
    this.tail = lastBytes(this.parts, this.window);
    this.parts = [];
  }

  private finish(): Frame {
    const size = this.size;
    const { head, tail, parts } = this;
    this.parts = [];
    this.size = 0;
    this.head = undefined;
    this.tail = undefined;
    if (head) {
      const kept = withoutCr(tail ?? Buffer.alloc(0));
      return { kind: 'oversize', head, tail: kept, bytes: size - ((tail?.length ?? 0) - kept.length) };
    }
    return {
      kind: 'line',
      bytes: withoutCr(parts.length === 1 ? (parts[0] as Buffer) : Buffer.concat(parts)),
    };
  }
}

/** A copy of the last `n` bytes of `parts` (a copy, so the big chunks they came from can go). */
function lastBytes(parts: readonly Buffer[], n: number): Buffer {
  const picked: Buffer[] = [];
  let taken = 0;
  for (let i = parts.length - 1; i >= 0 && taken < n; i--) {
    const part = parts[i] as Buffer;
    const take = Math.min(part.length, n - taken);
    picked.unshift(part.subarray(part.length - take));
    taken += take;
  }
  return Buffer.concat(picked, taken);
}

function withoutCr(bytes: Buffer): Buffer {
  return bytes.length > 0 && bytes[bytes.length - 1] === CR ? bytes.subarray(0, -1) : bytes;
}
