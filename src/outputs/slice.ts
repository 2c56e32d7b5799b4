import { characterEnd } from './stream.js';

export interface SavedSlice {
  readonly total_bytes: number;
  readonly offset: number;
  readonly next_offset: number | null;
  readonly bytes: number;
  readonly text: string;
}

/**
 * The characters of bytes [start, start + length) of a stream of `total` bytes, where `data`
 * holds its bytes from `from` (up to 3 before start, up to 7 past the end). A slice never splits a
 * character: one cut by `start` is left to the slice before (start moves on to the next
 * character's first byte), one cut by the end is left to the next slice (the end moves back to
 * its first byte, unless that leaves nothing: then the whole character is in). So `next_offset`
 * follows on exactly, and the texts of slices read one after another add up to the whole output.
 */
export function sliceText(
  data: Buffer,
  from: number,
  start: number,
  length: number,
  total: number,
): SavedSlice {
  let first = start - from;
  while (first < data.length && first < start - from + 3 && ((data[first] as number) & 0xc0) === 0x80)
    first++;
  const wanted = Math.min(start - from + length, data.length);
  let end = characterEnd(data, wanted);
  if (end <= first) {
    // One character longer than `length`: take it whole.
    end = first + 1;
    while (end < data.length && ((data[end] as number) & 0xc0) === 0x80) end++;
    end = Math.min(end, data.length);
  }
  if (first >= data.length) end = first = data.length;
  const offset = from + first;
  const next = from + end;
  return {
    total_bytes: total,
    offset,
    next_offset: next >= total ? null : next,
    bytes: end - first,
    text: data.subarray(first, end).toString('utf8'),
  };
}
