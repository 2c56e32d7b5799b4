import { readSync } from 'node:fs';
import { checkLine } from './chain.js';

const CHUNK = 64 * 1024;
/** How far back the last whole entry is looked for (an entry is at most ~700 KB). */
const MAX_SCAN = 16 * 1024 * 1024;

/**
 * The hash of the last whole, valid entry of an open audit file, read from its end; `torn` when
 * the file does not end with a newline (a writer died mid-line: the next entry starts a new one).
 */
export function lastEntry(fd: number, size: number): { hash: string; torn: boolean } | undefined {
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
        if (checked.ok) return { hash: checked.hash, torn };
      }
      if (nl < 0) return undefined; // the file's first line, checked
      lineEnd = nl;
    }
    pending = text.subarray(0, lineEnd);
    end = start;
  }
  return undefined;
}
