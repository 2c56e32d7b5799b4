import type { FileHandle } from 'node:fs/promises';

/** What a bounded read got: at most `limit` bytes, and whether the file had more than that. */
export interface BoundedRead {
  readonly data: Buffer;
  /** The file had more than `limit` bytes when it was read: `data` is its first `limit`. */
  readonly over: boolean;
}

/** Reads are asked for in pieces of at least this much, doubling with what came back. */
const FIRST_PIECE = 64 * 1024;

/**
 * The bytes of `handle` from its start, reading at most `limit` + 1: a size is enforced on what
 * was read, never on a stat taken before, since code beside the server may grow the file between
 * the two (or it may never end, like /dev/zero). Memory follows what the file holds, not `limit`.
 */
export async function readUpTo(handle: FileHandle, limit: number): Promise<BoundedRead> {
  const pieces: Buffer[] = [];
  let total = 0;
  const wanted = limit + 1;
  while (total < wanted) {
    const piece = Buffer.allocUnsafe(Math.min(wanted - total, Math.max(FIRST_PIECE, total)));
    const { bytesRead } = await handle.read(piece, 0, piece.length, total);
    if (bytesRead === 0) break;
    pieces.push(bytesRead === piece.length ? piece : piece.subarray(0, bytesRead));
    total += bytesRead;
  }
  const over = total > limit;
  const data = Buffer.concat(pieces, Math.min(total, limit));
  return { data, over };
}
