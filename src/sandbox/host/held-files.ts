// Small kernel files read again and again (a run cgroup's counters), each opened once and read with
// one pread at offset 0 after: kernfs and procfs make a seq file's text anew for a read at 0.
import { closeSync, openSync, readSync } from 'node:fs';

const CHUNK = 4096;

export class HeldFiles {
  private readonly fds = new Map<string, number>();

  /**
   * The file's text now. Its descriptor is opened on the first read and kept; a read that fails on
   * it (the file went, a cgroup removed and made again) is tried once more on a new one.
   */
  read(path: string): string {
    const held = this.fds.get(path);
    if (held !== undefined) {
      try {
        return readAll(held);
      } catch {
        this.fds.delete(path);
        closeQuietly(held);
      }
    }
    const fd = openSync(path, 'r');
    try {
      const text = readAll(fd);
      this.fds.set(path, fd);
      return text;
    } catch (error) {
      closeSync(fd);
      throw error;
    }
  }

  close(): void {
    for (const fd of this.fds.values()) closeQuietly(fd);
    this.fds.clear();
  }
}

/** Where reads land (they are synchronous): a file that fits is decoded from it, no buffer made. */
const SCRATCH = Buffer.alloc(CHUNK);

/** The whole file from offset 0: a seq file fills a read as far as it goes, so a short one is its end. */
function readAll(fd: number): string {
  const chunks: Buffer[] = [];
  for (let position = 0; ; ) {
    const read = readSync(fd, SCRATCH, 0, CHUNK, position);
    if (read < CHUNK && chunks.length === 0) return SCRATCH.toString('utf8', 0, read);
    chunks.push(Buffer.from(SCRATCH.subarray(0, read)));
    if (read < CHUNK) return Buffer.concat(chunks).toString('utf8');
    position += read;
  }
}

function closeQuietly(fd: number): void {
  try {
    closeSync(fd);
  } catch {
    // already closed
  }
}
