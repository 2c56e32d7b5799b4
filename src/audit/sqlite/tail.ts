import { closeSync, fstatSync, openSync, readSync } from 'node:fs';
import { join } from 'node:path';
import { checkLine } from '../chain.js';

const CHUNK = 64 * 1024;
/** How far back the last whole entry is looked for (an entry is at most ~700 KB). */
const MAX_SCAN = 16 * 1024 * 1024;

/**
 * The hash of the last whole, valid entry of an open audit file, read from its end; `torn` when
 * the file does not end with a newline (a writer died mid-line: the next entry starts a new one);
 * `signed` when it carries an HMAC.
 */
export function lastEntry(
  fd: number,
  size: number,
): { hash: string; torn: boolean; signed: boolean } | undefined {
  if (size === 0) return undefined;
  const lastByte = Buffer.alloc(1);
  readSync(fd, lastByte, 0, 1, size - 1);
  const torn = lastByte[0] !== 0x0a;
  // `pending` holds the bytes from `end` up to the start of the lines already checked: the
  // beginning of a line whose newline before it has not been read yet.
  let pending = Buffer.alloc(0);
  let end = size;
  while (end > 0 && size - end < MAX_SCAN) {
    const start = Math.max(0, end - CHUNK);
    const chunk = Buffer.alloc(end - start);
    readSync(fd, chunk, 0, chunk.length, start);
    const text = Buffer.concat([chunk, pending]);
    let lineEnd = text.length; // exclusive; offsets are relative to `start`
    for (let nl = text.lastIndexOf(0x0a, lineEnd - 1); ; nl = text.lastIndexOf(0x0a, lineEnd - 1)) {
      const lineStart = nl + 1;
      if (nl < 0 && start > 0) break; // this line may begin before `start`: read more first
      const line = text.subarray(lineStart, lineEnd).toString('utf8');
      const isTornTail = torn && start + lineEnd === size;
      if (line !== '' && !isTornTail) {
        const checked = checkLine(line);
        if (checked.ok) return { hash: checked.hash, torn, signed: checked.hmac !== undefined };
      }
      if (nl < 0) return undefined; // the file's first line, checked
      lineEnd = nl;
    }
    pending = text.subarray(0, lineEnd);
    end = start;
  }
  return undefined;
}

/**
 * How many whole, valid entries an open audit file holds between byte `from` (a line's start)
 * and `to`: torn lines, and a last line without its newline yet, are not entries.
 */
export function countEntries(fd: number, from: number, to: number): number {
  let count = 0;
  let pending = Buffer.alloc(0);
  for (let start = from; start < to; start += CHUNK) {
    const chunk = Buffer.alloc(Math.min(CHUNK, to - start));
    readSync(fd, chunk, 0, chunk.length, start);
    const text = Buffer.concat([pending, chunk]);
    let lineStart = 0;
    for (let nl = text.indexOf(0x0a); nl >= 0; nl = text.indexOf(0x0a, lineStart)) {
      if (nl > lineStart && checkLine(text.subarray(lineStart, nl).toString('utf8')).ok) count++;
      lineStart = nl + 1;
    }
    pending = text.subarray(lineStart);
  }
  return count;
}

/** `lastEntry` of the audit file `name` in `dir`. */
export function lastEntryOf(dir: string, name: string): ReturnType<typeof lastEntry> {
  const fd = openSync(join(dir, name), 'r');
  try {
    return lastEntry(fd, fstatSync(fd).size);
  } finally {
    closeSync(fd);
  }
}
