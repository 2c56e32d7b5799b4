import { closeSync, constants, fstatSync, openSync, readSync } from 'node:fs';

/**
 * The first `max` bytes of a small regular file that code may have replaced (a note in its
 * workspace): opened without following a symbolic link at its name and without waiting on a fifo;
 * undefined for anything but a regular file, or what cannot be read. Never more than `max` bytes
 * in memory, whatever the file is.
 */
export function readSmallFile(path: string, max: number): string | undefined {
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch {
    return undefined;
  }
  try {
    if (!fstatSync(fd).isFile()) return undefined;
    const buffer = Buffer.alloc(max);
    return buffer.subarray(0, readSync(fd, buffer, 0, max, 0)).toString('utf8');
  } catch {
    return undefined;
  } finally {
    closeSync(fd);
  }
}
